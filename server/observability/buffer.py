"""Metric values held in this process's memory between flushes: what keeps a request's metrics cheap.

prometheus-client's multiprocess mode writes every `inc` and `observe` through to an mmap'd file under a
process-wide lock (an observation is two such writes, and each checks the pid): about 13 per stored create,
7 % of the request path under load (py-spy), 11-16 % more CPU per create than with metrics off. Here a
hook adds to plain attributes of a `Count` (a counter's or a gauge's child) or a `Spread` (a histogram's:
a sum and a count per bucket), with no lock and no write. `flush` hands what piled up to the children, one
write per value that changed: every `FLUSH_SECONDS` from a timer on the process's event loop (`run_on`),
right before this process answers a scrape (`flush_for_scrape`), and as it stops (`stop`).

What readers see: a scrape adds up every process's files; another process's latest values reach them at
its next flush, so they may lag up to `FLUSH_SECONDS`, while the process that answers the scrape counts
its own up to the moment. The gauges (runs in flight, open streams) are flushed as deltas alike, so their
sum over processes may lag a second too. A process killed outright (SIGKILL, a crash) loses what it had
not flushed: its last second at most.

Hooks and flushes run on the process's event loop thread, so nothing here takes a lock. A scrape answered
on another thread (prometheus-client's own listener for `[metrics] worker_port`) asks the loop to flush
and waits for it a moment.
"""

from __future__ import annotations

import asyncio
import bisect
import concurrent.futures
import contextlib
import logging
import threading
from typing import Any, Final

#: how often the timer flushes: the most that another process's values lag in a scrape
FLUSH_SECONDS: Final = 1.0

log = logging.getLogger(__name__)


class Count:
    """A counter's or a gauge's child, and what was added to it since the last flush (a gauge's may be
    negative: a livesum gauge's file holds this process's part of the sum)."""

    __slots__ = ("child", "pending")

    def __init__(self, child: Any) -> None:
        self.child = child
        self.pending = 0.0

    def inc(self, amount: float = 1.0) -> None:
        self.pending += amount

    def dec(self) -> None:
        self.pending -= 1.0

    def flush(self) -> None:
        if self.pending:
            # taken before the write: a write that fails loses these, it never counts them twice
            amount, self.pending = self.pending, 0.0
            self.child.inc(amount)


class Spread:
    """A histogram's child, and the observations since the last flush: their sum and a count per bucket.

    The child's bounds, sum and bucket values are prometheus-client's private attributes (`_upper_bounds`,
    `_sum`, `_buckets`; tests/test_metrics.py checks that they are still there): its public `observe`
    writes one observation at a time, which is the cost this module avoids."""

    __slots__ = ("bounds", "buckets", "child", "counts", "observed", "total")

    def __init__(self, child: Any) -> None:
        self.child = child
        #: the upper bounds, +Inf last: an observation goes to the first bound it does not exceed
        self.bounds: tuple[float, ...] = tuple(child._upper_bounds)
        self.buckets: list[Any] = child._buckets
        self.counts = [0] * len(self.bounds)
        self.total = 0.0
        self.observed = 0

    def observe(self, value: float) -> None:
        # bisect_left: the first bound >= value, as prometheus-client's `amount <= bound`
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value
        self.observed += 1

    def flush(self) -> None:
        if not self.observed:
            return
        counts, total = self.counts, self.total
        self.counts, self.total, self.observed = [0] * len(self.bounds), 0.0, 0
        self.child._sum.inc(total)
        for value, count in zip(self.buckets, counts, strict=True):
            if count:
                value.inc(count)


#: every buffer made, by its child: a child's label values are bounded (metrics.py), so are these
_counts: dict[Any, Count] = {}
_spreads: dict[Any, Spread] = {}
_loop: asyncio.AbstractEventLoop | None = None
_thread: int | None = None
_timer: asyncio.TimerHandle | None = None


def count(child: Any) -> Count:
    """The buffer of a counter's or a gauge's child (the metric itself when it has no labels)."""
    found = _counts.get(child)
    if found is None:
        found = _counts[child] = Count(child)
    return found


def spread(child: Any) -> Spread:
    """The buffer of a histogram's child (the metric itself when it has no labels)."""
    found = _spreads.get(child)
    if found is None:
        found = _spreads[child] = Spread(child)
    return found


def flush() -> None:
    """Every buffer's values into its child (on the loop's thread, or before the loop runs)."""
    for counted in _counts.values():
        counted.flush()
    for observed in _spreads.values():
        observed.flush()


def run_on(loop: asyncio.AbstractEventLoop) -> None:
    """Flush every FLUSH_SECONDS on `loop`, the running loop of this thread, until `stop`."""
    global _loop, _thread, _timer
    if _timer is not None:
        _timer.cancel()
    _loop, _thread = loop, threading.get_ident()
    _timer = loop.call_later(FLUSH_SECONDS, _tick)


def _tick() -> None:
    global _timer
    try:
        flush()
    except Exception:
        # a metrics file that cannot be written (a full disk) must not stop the flushes that follow
        log.exception("metrics: a flush failed")
    if _loop is not None and not _loop.is_closed():
        _timer = _loop.call_later(FLUSH_SECONDS, _tick)


def flush_for_scrape() -> None:
    """Before this process answers a scrape, from whichever thread answers it: its values up to now."""
    loop = _loop
    if loop is None or threading.get_ident() == _thread:
        flush()
        return
    done: concurrent.futures.Future[None] = concurrent.futures.Future()

    def flush_then_answer() -> None:
        try:
            flush()
        finally:
            done.set_result(None)

    try:
        loop.call_soon_threadsafe(flush_then_answer)
    except RuntimeError:
        return  # the loop is closed: `stop` flushed already
    # a loop that is blocked this long answers with what the last timer's flush wrote
    with contextlib.suppress(concurrent.futures.TimeoutError):
        done.result(timeout=FLUSH_SECONDS)


def stop() -> None:
    """This process is stopping: the timer ends, and what is left is flushed."""
    global _loop, _thread, _timer
    if _timer is not None:
        _timer.cancel()
    _loop, _thread, _timer = None, None, None
    flush()
