"""Write deadlines: a script that Redis runs after its caller stopped waiting writes nothing.

A command sent into a Redis that is frozen (SIGSTOP, a stalled disk, a long fork) or behind a stalled
network sits in its socket. The caller times out after `store.redis_timeout_seconds` and answers 503, "try
again shortly"; without a deadline Redis would run the script when it thaws, and the 503 would have been a
lie (a create the SDK then retried was stored once per try). So every writing script carries the time after
which nobody waits for it, in Redis's own clock, and its prelude (`scripts/_deadline.lua`) compares it with
Redis's TIME: a late script answers LATE and changes nothing.

The deadline is this process's clock plus the offset of Redis's clock (measured with TIME when the store
opens, again every minute, and at once after a LATE that came back while its caller still waited: a Redis
host whose clock is off must not refuse every write), plus the caller's wait less a margin for the reply's
way back. A reply lost after the script ran in time (a connection cut in that margin) is the one case where
a timeout may hide a write: the callers that must know read it back (a settle retried with its fence, a
create found by its id or its Idempotency-Key).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

log = logging.getLogger(__name__)

#: how often the offset of Redis's clock is measured again
_CALIBRATE_EVERY = 60.0
#: the longest margin kept for a reply's way back from Redis
_MARGIN_SECONDS = 0.25

#: Redis's clock, in ms (TIME)
RedisClock = Callable[[], Awaitable[int]]


class LateWrite(RedisConnectionError):
    """Redis ran a script after its deadline and wrote nothing: an outage, answered with a 503."""


def is_late(exc: ResponseError) -> bool:
    return str(exc).startswith("LATE")


def redis_ms(reply: tuple[int, int] | list[int]) -> int:
    """TIME's (seconds, microseconds) in ms."""
    seconds, micros = reply
    return int(seconds) * 1000 + int(micros) // 1000


class Deadlines:
    """The deadlines of one Redis's scripts."""

    __slots__ = ("budget_ms", "calibrated_at", "calibrating", "clock", "offset_ms")

    def __init__(self, bound_seconds: float, clock: RedisClock | None = None) -> None:
        """`bound_seconds`: how long a caller waits for a script's reply; `clock`: reads Redis's TIME
        (None: Redis's clock is taken to be this process's)."""
        margin = min(_MARGIN_SECONDS, bound_seconds / 4)
        self.budget_ms = int((bound_seconds - margin) * 1000)
        self.clock = clock
        #: Redis's clock less this process's, in ms
        self.offset_ms = 0
        self.calibrated_at = time.monotonic()
        self.calibrating: asyncio.Task[None] | None = None

    def next(self) -> int:
        """The deadline of a script sent now."""
        if self.clock is not None and time.monotonic() - self.calibrated_at > _CALIBRATE_EVERY:
            self.recalibrate()
        return int(time.time() * 1000) + self.offset_ms + self.budget_ms

    def recalibrate(self) -> None:
        """Measure the offset again, in the background (once at a time)."""
        if self.clock is None or (self.calibrating is not None and not self.calibrating.done()):
            return
        self.calibrated_at = time.monotonic()
        self.calibrating = asyncio.ensure_future(self._quietly())

    async def _quietly(self) -> None:
        try:
            await self.calibrate()
        except Exception as exc:  # an outage: the next minute, or the next LATE, tries again
            log.debug("could not read Redis's clock: %s", exc)

    async def calibrate(self) -> None:
        """Read Redis's clock: its offset from this process's, halfway through the round trip."""
        if self.clock is None:
            return
        sent = time.time() * 1000
        theirs = await self.clock()
        received = time.time() * 1000
        offset = int(theirs - (sent + received) / 2)
        if abs(offset - self.offset_ms) > 100:
            log.info("Redis's clock is %+d ms from this process's; write deadlines follow it", offset)
        self.offset_ms = offset
        self.calibrated_at = time.monotonic()
