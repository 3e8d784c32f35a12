"""Worker heartbeats: who consumes a queue, so that a queue nobody consumes is seen, not waited on."""

from __future__ import annotations

import logging
import os
import secrets
import socket
import time

from redis.asyncio import Redis

from . import keys

log = logging.getLogger(__name__)

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


class Unconsumed:
    """Says in the log, once a spell, that background work waits in the queue and no worker consumes it
    (EMBEDDED_WORKER=0 and no `make worker`: the creates answer, their runs wait with no other sign), and
    once that a worker came. Run by every process, every heartbeat; a process with a worker inside never
    says it."""

    def __init__(self, redis: Redis, queue_name: str, interval: float) -> None:
        self.redis = redis
        self.queue_name = queue_name
        self.interval = interval
        self.warned = False

    async def check(self) -> None:
        # the jobs due by now: a job queued for later (a trigger's next time, a webhook's retry) waits for
        # its time, not for a worker, and a queue of those alone costs this check no second command
        waiting = int(await self.redis.zcount(self.queue_name, "-inf", int(time.time() * 1000)))
        if not self.warned and waiting and await alive(self.redis, self.queue_name, self.interval) == 0:
            self.warned = True
            log.warning(
                "%d background job(s) wait in the queue %r and no worker consumes it (none heard from in the "
                "last %g s): start one (make worker), or let the web processes run one (EMBEDDED_WORKER=1)",
                waiting,
                self.queue_name,
                MISSED_BEATS * self.interval,
            )
        elif self.warned and await alive(self.redis, self.queue_name, self.interval) > 0:
            self.warned = False
            log.warning("a worker consumes the queue %r again", self.queue_name)
