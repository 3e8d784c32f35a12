"""Redis outages, said once: the first failure of an outage is a warning, the recovery another, and the
failures in between (every loop of every component retries several times a second) are quiet.

One tracker per process, shared by its background loops (event-log writer, reaper, broadcast listener,
worker poll loop and heartbeat). It also tells the reaper when Redis came back: leases could not be renewed
during the outage, so a run whose lease ran out meanwhile may be alive and must get time to renew it.
"""

from __future__ import annotations

import logging
import time

from redis.exceptions import ClusterError, ReadOnlyError, SlotNotCoveredError, TryAgainError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ..observability import metrics

log = logging.getLogger(__name__)

#: what an unreachable or hung Redis raises (a script error or a wrong type is a bug, not an outage), and a
#: Redis not in a state to serve (state_errors.py): a Cluster that lost a node or is moving a slot
#: (ClusterError: CLUSTERDOWN, MASTERDOWN, redirections that never ended; store/cluster.py's SlotMoving and
#: ClusterUnavailable are connection errors), a primary demoted by a failover (READONLY)
UNAVAILABLE = (
    RedisConnectionError,
    RedisTimeoutError,
    ConnectionError,
    TimeoutError,
    ClusterError,
    SlotNotCoveredError,
    TryAgainError,
    ReadOnlyError,
)


def reason(exc: BaseException) -> str:
    """What failed, never empty: the exception's class, and its message when it has one (a timeout of
    `asyncio.timeout` has none)."""
    message = str(exc).strip()
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


class Outage:
    def __init__(self) -> None:
        #: monotonic time the current outage began, or None while Redis answers
        self.since: float | None = None
        #: monotonic time Redis last came back (0: no outage yet)
        self.recovered_at = 0.0

    def failed(self, where: str, exc: BaseException, *, began: float | None = None) -> None:
        """`where` (what was being done) failed with `exc`; `began`: when that attempt started (monotonic).
        An outage begins when its first failed attempt was sent, not when it gave up: a command that
        waited out its bound against a frozen Redis was failing all along (a 3 s freeze with a 2 s bound
        read "back after 0.0 s" when it was dated from the give-up)."""
        metrics.redis_failed(where)
        if self.since is None:
            now = time.monotonic()
            self.since = now if began is None else min(began, now)
            waited = f" after {now - self.since:.1f} s" if began is not None else ""
            log.warning(
                "Redis unavailable (%s failed%s: %s); retrying quietly until it is back",
                where,
                waited,
                reason(exc),
            )

    def answered(self) -> None:
        if self.since is not None:
            log.warning("Redis is back after %.1f s", time.monotonic() - self.since)
            self.since = None
            self.recovered_at = time.monotonic()

    def recent(self, within: float) -> bool:
        """Redis is down now, or came back less than `within` seconds ago."""
        return self.since is not None or time.monotonic() - self.recovered_at < within
