"""Scenario 6, many concurrent slow streams through one web process: errors, how many were open at once,
the peak RSS and open file descriptors of the serving process, beside the baseline's byte relay.

The streams are streamed stored creates of `bench-drip`, which the fake upstream in a process of its own
(bench/upstream_server.py) answers slowly: `drip_words` deltas, one every `drip_interval`, but the last,
which waits until every stream is open and has been for `many_hold_seconds`; then the bench releases them
and they end, `many_end_per_second` a second. Each holds a client connection and an upstream connection in
the web process, mostly idle. They are opened as fast as the server answers them, at most `many_opening`
waiting for their first bytes at once and `many_open_per_second` started a second: the ramp measures what
the server holds, not how it fails when flooded.

They are served by a server of this scenario's own, whose `[http] max_connections` (granian's backpressure:
the connections one web process holds; 4,096 by default) admits them all. Two descriptors a stream is
also why fewer than 10,000 may run: a process may not open more than the hard `ulimit -n` (20,000 on the
bench's machine), and the count is cut to what the serving process's limit leaves room for. The baseline
relays the same upstream streams through the server's own upstream client (`/remote/relay`), as many as it
can hold (`many_baseline_streams`): bench/baseline_app.py leaves granian's backpressure at its default,
1,024 connections a process, and caps its client's pool at 4,000.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections import Counter
from typing import Any

from ..client import Connection
from ..procs import cpu_seconds, fd_limit, open_fds, rss_bytes
from ..stats import ratio
from .common import HEADERS, Bench
from .streaming import Endpoint, create_endpoint, relay_endpoint, stream

MODEL = "bench-drip"
#: file descriptors kept free in the serving process beside the two of each stream: about 30 at idle, and its
#: Redis command pool grows to 128 connections under a burst (server/store/connection.py); with 64 kept
#: free, 9,953 streams hit EMFILE on a few upstream connects. A stream count above what the rest allows is
#: cut to it
FD_RESERVE = 200
#: seconds with no stream opening that end the ramp
STALLED = 10.0
#: the longest ramp: on a machine so loaded that opening them all takes longer, the streams open by then are
#: held and released (the peak says how many), and the scenario stays within its time limit
RAMP_SECONDS = 60.0


class _OpenStreams:
    """How many streams are open (their first bytes arrived, their end not yet), the most at once, and
    whether every stream has opened or failed by now (`settled`)."""

    def __init__(self, streams: int) -> None:
        self.streams = streams
        self.active = 0
        self.peak = 0
        self.done_opening = 0
        self.settled = asyncio.Event()

    def opened(self) -> None:
        self.active += 1
        self.peak = max(self.peak, self.active)
        self.settle()

    def settle(self) -> None:
        """Opened or failed: either way one more stream is done opening."""
        self.done_opening += 1
        if self.done_opening >= self.streams:
            self.settled.set()

    def closed(self) -> None:
        self.active -= 1


class _Peaks:
    """The RSS and open file descriptors of some processes before (`idle`), and their peaks while in the
    `async with`: RSS sampled every 100 ms, descriptors every 500 ms (listing 20,000 of them is not free)."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.idle = {pid: rss_bytes(pid) for pid in pids}
        self.idle_fds = {pid: open_fds(pid) for pid in pids}
        self.peak: dict[int, int] = {}
        self.peak_fds: dict[int, int] = {}
        self._done = asyncio.Event()
        self._sampler: asyncio.Task[None] | None = None

    async def __aenter__(self) -> _Peaks:
        self._sampler = asyncio.create_task(self._sample())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._done.set()
        if self._sampler is not None:
            await self._sampler

    async def _sample(self) -> None:
        tick = 0
        while not self._done.is_set():
            for pid in self.pids:
                self.peak[pid] = max(self.peak.get(pid, 0), rss_bytes(pid))
                if tick % 5 == 0:
                    self.peak_fds[pid] = max(self.peak_fds.get(pid, 0), open_fds(pid))
            tick += 1
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.1):
                    await self._done.wait()

    def busiest(self) -> int:
        """The process whose RSS went highest: with several serving processes, the one the streams went to."""
        return max(self.pids, key=lambda pid: self.peak.get(pid, 0))


@dataclasses.dataclass(frozen=True)
class _Run:
    """One path's streams: where they go, how many, how fast they may be opened and how many at once."""

    endpoint: Endpoint
    streams: int
    per_second: float
    words: int
    #: a stream holds it from its connect to its first bytes: the ramp goes as fast as the server opens
    #: streams, never faster (an overloaded server fails requests, which is not what this measures)
    opening: asyncio.Semaphore


async def _drip(run: _Run, index: int, open_streams: _OpenStreams, errors: Counter[str]) -> None:
    """One of the streams, started at its moment of the ramp and read to its end; a stream that fails, or
    ends without every delta and the end marker, counts as an error of its kind."""
    await asyncio.sleep(index / run.per_second)
    await run.opening.acquire()
    conn = Connection(run.endpoint.server.url, HEADERS)
    opening, count, ended = True, 0, False
    tail: list[bytes] = []
    try:
        await conn.open()
        async for _now, found, saw_end in stream(conn, run.endpoint, f"many{index}", tail):
            if opening:
                opening = False
                run.opening.release()
                open_streams.opened()
            count += found
            ended = ended or saw_end
        if count != run.words or not ended:
            last = tail[0][-160:].decode(errors="replace") if tail else "nothing"
            errors[f"incomplete stream ({count}/{run.words} deltas, end {ended}): {last}"] += 1
    except Exception as exc:
        errors[f"{type(exc).__name__}: {str(exc)[:80]}"] += 1
    finally:
        if opening:
            run.opening.release()
            open_streams.settle()
        else:
            open_streams.closed()
        await conn.close()


def _fd_room(pid: int) -> int | None:
    """How many more streams the process's descriptor limit leaves room for (two descriptors each)."""
    limit = fd_limit(pid)
    return None if limit is None else max(0, (limit - open_fds(pid) - FD_RESERVE) // 2)


async def _upstream(b: Bench, path: str) -> None:
    """Tell the drip upstream to hold the streams' ends, or to release them (bench/upstream_server.py)."""
    async with Connection(f"http://127.0.0.1:{b.stack.remote_upstream_port}") as conn:
        response = await conn.request("POST", path)
    if response.status != 200:
        raise RuntimeError(f"upstream {path}: status {response.status}")


async def _redis_clients(b: Bench) -> int:
    info = await b.redis.info("clients")
    return int(info["connected_clients"])


async def _settled(open_streams: _OpenStreams) -> None:
    """Until every stream has opened or failed, or none has for `STALLED` seconds (a server that holds no
    more connections, granian's backpressure, leaves the rest waiting until some end, which they would not
    before the release), or `RAMP_SECONDS` have passed."""
    deadline = time.monotonic() + RAMP_SECONDS
    while time.monotonic() < deadline:
        before = open_streams.done_opening
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(min(STALLED, deadline - time.monotonic())):
                await open_streams.settled.wait()
                return
        if open_streams.done_opening == before:
            return


async def _open_hold_end(
    b: Bench, run: _Run, open_streams: _OpenStreams, errors: Counter[str]
) -> tuple[float, int]:
    """Open the streams, hold them all open for `many_hold_seconds` once the last has opened, then let the
    upstream end them: the seconds it took them to open, and Redis's clients while all were open."""
    plan = b.plan
    started = time.monotonic()
    drips = asyncio.gather(*(_drip(run, i, open_streams, errors) for i in range(run.streams)))
    try:
        await _settled(open_streams)
        opened_in = time.monotonic() - started
        redis_clients = await _redis_clients(b)
        await asyncio.sleep(plan.many_hold_seconds)
        await _upstream(b, f"/drip/release?per_second={plan.many_end_per_second}")
        await drips
    except BaseException:
        drips.cancel()
        raise
    return opened_in, redis_clients


async def _many(b: Bench, endpoint: Endpoint, wanted: int) -> dict[str, Any]:
    """`wanted` streams, or as many as the serving process's descriptors can hold, all open at once."""
    pids = endpoint.server.serving_pids()
    room = min((r for r in map(_fd_room, pids) if r is not None), default=None)
    streams = wanted if room is None else min(wanted, room)
    plan = b.plan
    opening = asyncio.Semaphore(plan.many_opening)
    run = _Run(endpoint, streams, plan.many_open_per_second, plan.drip_words, opening)
    errors: Counter[str] = Counter()
    open_streams = _OpenStreams(streams)
    await _upstream(b, "/drip/hold")
    redis_idle = await _redis_clients(b)
    peaks = _Peaks(pids)
    async with peaks:
        started = time.monotonic()
        cpu_before = cpu_seconds(pids)
        opened_in, redis_clients = await _open_hold_end(b, run, open_streams, errors)
    wall = time.monotonic() - started
    busiest = peaks.busiest()
    idle, peak = peaks.idle.get(busiest, 0), peaks.peak.get(busiest, 0)
    return {
        "wanted": wanted,
        "streams": streams,
        "fd_limit": fd_limit(busiest),
        "errors": sum(errors.values()),
        "error_kinds": dict(errors),
        "peak_concurrent": open_streams.peak,
        "open_seconds": round(opened_in, 2),
        "seconds": round(wall, 2),
        "rss_idle_mb": round(idle / 2**20, 1),
        "rss_peak_mb": round(peak / 2**20, 1),
        "rss_kb_per_stream": round((peak - idle) / 1024 / max(1, open_streams.peak), 1),
        "fds_idle": peaks.idle_fds.get(busiest, 0),
        "fds_peak": peaks.peak_fds.get(busiest, 0),
        # the upstream connections the web process keeps for reuse once the streams have ended
        "fds_after": open_fds(busiest),
        "redis_clients_idle": redis_idle,
        "redis_clients_all_open": redis_clients,
        "server_cores": round((cpu_seconds(pids) - cpu_before) / wall, 3),
        "server_cpu_ms_per_stream": round((cpu_seconds(pids) - cpu_before) * 1000 / max(1, streams), 2),
    }


def _config(b: Bench) -> str:
    """The IX_CONFIG of this scenario's server: the defaults but for the connections it may hold."""
    path = b.workdir / "many-server.toml"
    # every stream is a connection held; more than the streams wait in the listen backlog
    path.write_text(f"[http]\nmax_connections = {b.plan.many_streams + 1000}\n")
    return str(path)


async def many_streams(b: Bench) -> dict[str, Any]:
    plan = b.plan
    drip = {"BENCH_DRIP_WORDS": str(plan.drip_words), "BENCH_DRIP_INTERVAL": str(plan.drip_interval)}
    upstream = await b.stack.start_upstream("upstream-drip", **drip)
    server = None
    try:
        server = await b.stack.start_server("server-many", 1, IX_CONFIG=_config(b))
        ours = await _many(b, create_endpoint(server, MODEL), plan.many_streams)
        relay = dataclasses.replace(relay_endpoint(b.one_baseline, MODEL), path="/remote/relay")
        baseline = await _many(b, relay, plan.many_baseline_streams)
    finally:
        await asyncio.to_thread(b.stack.stop_children, [upstream] + ([server.child] if server else []))
    return {
        "words_per_stream": plan.drip_words,
        "word_interval_ms": plan.drip_interval * 1000,
        "hold_seconds": plan.many_hold_seconds,
        "ours": ours,
        "baseline": baseline,
        "rss_per_stream_ratio": ratio(ours["rss_kb_per_stream"], baseline["rss_kb_per_stream"]),
    }
