"""Worker heartbeats: who consumes a queue, so that a queue nobody consumes is seen, not waited on."""

from __future__ import annotations

import os
import secrets
import socket
import time

from redis.asyncio import Redis

from . import keys

#: a worker not heard from for this many heartbeats is gone
MISSED_BEATS = 3


def worker_name() -> str:
    return f"{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(3)}"


#: a worker drops the workers that stopped beating (and renews the set's expiry) every this many beats: an
#: idle worker's cost is mostly its beats, and readers count only recent beats anyway
TIDY_EVERY = 10


async def beat(redis: Redis, queue_name: str, name: str, interval: float, *, tidy: bool) -> None:
    """Say `name` consumes the queue now; with `tidy`, also drop the workers that stopped saying so."""
    now = time.time()
    key = keys.workers(queue_name)
    # plain commands, each bounded like every command (a pipeline is not)
    await redis.zadd(key, {name: now})
    if tidy:
        await redis.zremrangebyscore(key, "-inf", now - MISSED_BEATS * interval)
        # the set outlives its last worker only briefly
        await redis.expire(key, max(60, int(MISSED_BEATS * interval * TIDY_EVERY * 2)))


async def leave(redis: Redis, queue_name: str, name: str) -> None:
    await redis.zrem(keys.workers(queue_name), name)


async def alive(redis: Redis, queue_name: str, interval: float) -> int:
    """How many workers beat within the last MISSED_BEATS intervals (clocks of the hosts assumed in
    step to well under a heartbeat)."""
    since = time.time() - MISSED_BEATS * interval
    return int(await redis.zcount(keys.workers(queue_name), since, "+inf"))
