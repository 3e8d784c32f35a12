"""The broadcasts every process follows: cancel a run, forget a tenant's cached histories."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from redis.asyncio import Redis

from ..store.outage import UNAVAILABLE, Outage

log = logging.getLogger(__name__)

#: how long a silent subscription waits before it pings Redis (a dead connection shows up then)
_IDLE_SECONDS = 5.0


async def listen(
    redis: Redis,
    handlers: Mapping[str, Callable[[str], object]],
    ready: asyncio.Event,
    outage: Outage,
    on_subscribed: Callable[[], object] | None = None,
) -> None:
    """Follow the channels for ever, reconnecting; each message goes to its channel's handler.
    `on_subscribed` runs on every (re)subscription: what was broadcast in between is lost."""
    while True:
        try:
            async with redis.pubsub(ignore_subscribe_messages=True) as pubsub:
                await pubsub.subscribe(*handlers)
                outage.answered()
                if on_subscribed is not None:
                    on_subscribed()
                ready.set()
                while True:
                    # an explicit timeout: the client's own (every command's bound) would end a quiet wait
                    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=_IDLE_SECONDS)
                    if message is None:
                        await pubsub.ping()
                        continue
                    channel, data = message.get("channel"), message.get("data")
                    if isinstance(channel, bytes) and isinstance(data, bytes):
                        handlers[channel.decode()](data.decode())
        except asyncio.CancelledError:
            raise
        except UNAVAILABLE as exc:
            ready.clear()
            outage.failed("broadcast channels", exc)
            await asyncio.sleep(0.5)
        except Exception:
            ready.clear()
            log.exception("broadcast listener failed; subscribing again")
            await asyncio.sleep(0.5)
