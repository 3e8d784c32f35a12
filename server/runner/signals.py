"""The broadcasts every process follows: cancel a run, forget a tenant's cached histories."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

from redis.asyncio import Redis

from ..store.outage import Outage
from .loops import supervise

#: how long a silent subscription waits before it pings Redis (a dead connection shows up then; a cancel
#: lost meanwhile is still seen by its run's next log write, within runner.heartbeat_seconds)
_IDLE_SECONDS = 10.0
_RESUBSCRIBE_SECONDS = 0.5


async def listen(
    redis: Redis,
    handlers: Mapping[str, Callable[[str], object]],
    ready: asyncio.Event,
    outage: Outage,
    on_subscribed: Callable[[], object] | None = None,
) -> None:
    """Follow the channels for ever, subscribing again after a failure; each message goes to its
    channel's handler. `on_subscribed` runs on every (re)subscription: what was broadcast in between is
    lost. `ready` is set while subscribed."""

    async def follow() -> None:
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

    await supervise("broadcast channels", follow, outage, pause=_RESUBSCRIBE_SECONDS, on_failure=ready.clear)
