"""The broadcasts every process follows: cancel a run, forget a tenant's cached histories."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from redis.asyncio import Redis

log = logging.getLogger(__name__)


async def listen(
    redis: Redis,
    handlers: Mapping[str, Callable[[str], object]],
    ready: asyncio.Event,
    on_subscribed: Callable[[], object] | None = None,
) -> None:
    """Follow the channels for ever, reconnecting; each message goes to its channel's handler.
    `on_subscribed` runs on every (re)subscription: what was broadcast in between is lost."""
    while True:
        try:
            async with redis.pubsub(ignore_subscribe_messages=True) as pubsub:
                await pubsub.subscribe(*handlers)
                if on_subscribed is not None:
                    on_subscribed()
                ready.set()
                async for message in pubsub.listen():
                    channel, data = message.get("channel"), message.get("data")
                    if isinstance(channel, bytes) and isinstance(data, bytes):
                        handlers[channel.decode()](data.decode())
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            ready.clear()
            log.warning("lost the broadcast channels (%s); reconnecting", exc)
            await asyncio.sleep(0.5)
