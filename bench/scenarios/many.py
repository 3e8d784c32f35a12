"""Scenario 6, many concurrent streams through one web process: errors, and the peak RSS of the serving
process, beside the baseline's byte relay of the same streams."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from typing import Any

from ..client import Connection
from ..procs import cpu_seconds, rss_bytes
from ..stats import ratio
from .common import HEADERS, Bench
from .streaming import Endpoint, create_endpoint, relay_endpoint, stream


class _OpenStreams:
    """How many streams are open (their first bytes arrived, their end not yet), and the most at once."""

    def __init__(self) -> None:
        self.active = 0
        self.peak = 0

    def opened(self) -> None:
        self.active += 1
        self.peak = max(self.peak, self.active)

    def closed(self) -> None:
        self.active -= 1


class _RssPeak:
    """The RSS of some processes before (`idle`), and their peak sampled every 100 ms while in the
    `async with`."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.idle = {pid: rss_bytes(pid) for pid in pids}
        self.peak: dict[int, int] = {}
        self._done = asyncio.Event()
        self._sampler: asyncio.Task[None] | None = None

    async def __aenter__(self) -> _RssPeak:
        self._sampler = asyncio.create_task(self._sample())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._done.set()
        if self._sampler is not None:
            await self._sampler

    async def _sample(self) -> None:
        while not self._done.is_set():
            for pid in self.pids:
                self.peak[pid] = max(self.peak.get(pid, 0), rss_bytes(pid))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.1):
                    await self._done.wait()

    def busiest(self) -> int:
        """The process whose RSS went highest: with several serving processes, the one the streams went to."""
        return max(self.pids, key=lambda pid: self.peak.get(pid, 0))


async def _drip(
    b: Bench, endpoint: Endpoint, index: int, open_streams: _OpenStreams, errors: Counter[str]
) -> None:
    """One of the streams, started at its moment of the ramp and read to its end; a stream that fails, or
    ends without every delta and the end marker, counts as an error of its kind."""
    plan = b.plan
    await asyncio.sleep(index * plan.many_ramp_seconds / plan.many_streams)
    conn = Connection(endpoint.server.url, HEADERS)
    opened = False
    count, ended = 0, False
    tail: list[bytes] = []
    try:
        await conn.open()
        async for _now, found, saw_end in stream(conn, endpoint, f"many{index}", tail):
            if not opened:
                opened = True
                open_streams.opened()
            count += found
            ended = ended or saw_end
        if count != plan.drip_words or not ended:
            last = tail[0][-160:].decode(errors="replace") if tail else "nothing"
            errors[f"incomplete stream ({count}/{plan.drip_words} deltas, end {ended}): {last}"] += 1
    except Exception as exc:
        errors[f"{type(exc).__name__}: {str(exc)[:80]}"] += 1
    finally:
        if opened:
            open_streams.closed()
        await conn.close()


async def _many(b: Bench, endpoint: Endpoint) -> dict[str, Any]:
    """`many_streams` streams opened over `many_ramp_seconds`, each of `drip_words` deltas, one per
    `drip_interval`."""
    plan = b.plan
    errors: Counter[str] = Counter()
    open_streams = _OpenStreams()
    pids = endpoint.server.serving_pids()
    rss = _RssPeak(pids)
    async with rss:
        started = time.monotonic()
        cpu_before = cpu_seconds(pids)
        await asyncio.gather(*(_drip(b, endpoint, i, open_streams, errors) for i in range(plan.many_streams)))
    wall = time.monotonic() - started
    busiest = rss.busiest()
    return {
        "streams": plan.many_streams,
        "errors": sum(errors.values()),
        "error_kinds": dict(errors),
        "peak_concurrent": open_streams.peak,
        "seconds": round(wall, 2),
        "rss_idle_mb": round(rss.idle.get(busiest, 0) / 2**20, 1),
        "rss_peak_mb": round(rss.peak.get(busiest, 0) / 2**20, 1),
        "server_cores": round((cpu_seconds(pids) - cpu_before) / wall, 3),
    }


async def many_streams(b: Bench) -> dict[str, Any]:
    b.upstream.exchanges.clear()
    ours = await _many(b, create_endpoint(b.one_server, "bench-drip"))
    b.upstream.exchanges.clear()
    baseline = await _many(b, relay_endpoint(b.one_baseline, "bench-drip"))
    b.upstream.exchanges.clear()
    b.drain_arrivals()
    return {
        "words_per_stream": b.plan.drip_words,
        "word_interval_ms": b.plan.drip_interval * 1000,
        "ours": ours,
        "baseline": baseline,
        "rss_peak_ratio": ratio(ours["rss_peak_mb"], baseline["rss_peak_mb"]),
    }
