"""Scenario 6, many concurrent slow streams through one web process: errors, how many were open at once,
the peak RSS and open file descriptors of the serving process, beside the baseline's byte relay.

Streamed stored creates (plan.py says how many, how long, how fast) on a fresh server of the scenario's own
per variant, with echo-slow's word delay set and `[http] max_connections` (granian's backpressure) above the
stream count: of `echo-slow`, one socket a stream in the web process, and of `bench-drip` on the upstream
process (bench/upstream_server.py), two (client and upstream), so cut to what the hard `ulimit -n` leaves
room for. At most `many_opening` open at once and `many_open_per_second` a second: the ramp measures what
the server holds, not how it fails when flooded. The baseline relays `many_baseline_streams` drip streams
(`/remote/relay`): bench/baseline_app.py holds 1,024 connections (granian's default).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
import re
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from ..client import Connection
from ..procs import cpu_seconds, fd_limit, open_fds, rss_bytes
from .common import HEADERS, Bench
from .plan import Plan
from .streaming import Endpoint, create_endpoint, relay_endpoint, stream

DRIP, ECHO = "bench-drip", "echo-slow"
#: descriptors kept free in the serving process beside the streams': ~30 at idle, and its Redis pool grows
#: to 128 connections (server/store/connection.py); with 64 free, 9,953 drip streams hit EMFILE
FD_RESERVE = 200
#: seconds with no stream opening that end the ramp
STALLED = 10.0
#: the longest ramp: on a machine too loaded to open them all by then, the peak says how many opened
RAMP_SECONDS = 60.0
#: the tag of a stream and the step.delta events it must have, given its index, as it is sent
Shape = Callable[[int], tuple[str, int]]
_ERROR = re.compile(r'event: error\ndata: .*?"code":"([^"]*)","message":"([^"]*)"')


class _OpenStreams:
    """How many streams are open (their first bytes arrived, their end not yet), the most at once, and
    whether every stream has opened or failed by now (`settled`)."""

    def __init__(self, streams: int) -> None:
        self.streams = streams
        self.active = self.peak = self.done_opening = 0
        self.settled = asyncio.Event()

    def opened(self) -> None:
        self.active += 1
        self.peak = max(self.peak, self.active)
        self.settle()

    def settle(self) -> None:  # opened or failed: either way one more stream is done opening
        self.done_opening += 1
        if self.done_opening >= self.streams:
            self.settled.set()


class _Peaks:
    """The RSS and open file descriptors of some processes before (`idle`), and their peaks until `done`:
    RSS sampled every 100 ms, descriptors every 500 ms (listing 20,000 of them is not free)."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.idle = {pid: rss_bytes(pid) for pid in pids}
        self.idle_fds = {pid: open_fds(pid) for pid in pids}
        self.peak, self.peak_fds = dict(self.idle), dict(self.idle_fds)
        self.done = asyncio.Event()

    async def sample(self) -> None:
        tick = 0
        while not self.done.is_set():
            for pid in self.pids:
                self.peak[pid] = max(self.peak[pid], rss_bytes(pid))
                if tick % 5 == 0:
                    self.peak_fds[pid] = max(self.peak_fds[pid], open_fds(pid))
            tick += 1
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.1):
                    await self.done.wait()


class _EchoWords:
    """Stream `index`'s input, which echo-slow answers a word per delay, and its words, sized as it is sent
    to last the slack past the ramp's planned end plus index / the end pace (the slack at least)."""

    def __init__(self, plan: Plan, streams: int) -> None:
        self.plan = plan
        self.given: list[int] = []
        self.first_end = time.monotonic() + streams / plan.many_open_per_second + plan.many_echo_slack_seconds

    def __call__(self, index: int) -> tuple[str, int]:
        plan = self.plan
        end = self.first_end + index / plan.many_end_per_second
        left = max(plan.many_echo_slack_seconds, end - time.monotonic())
        words = max(2, math.ceil(left * 1000 / plan.many_echo_word_delay_ms))
        self.given.append(words)
        # the input is the tag and " go" (streaming.create_endpoint), and the answer is the input
        return f"many{index}" + " w" * (words - 2), words


@dataclasses.dataclass(frozen=True)
class _Run:
    """One path's streams: where they go, how many, what each asks, how fast they may be opened."""

    endpoint: Endpoint
    streams: int
    per_second: float
    shape: Shape
    opening: asyncio.Semaphore  # held from connect to first bytes: the ramp waits for the server


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
        tag, words = run.shape(index)
        async for _now, found, saw_end in stream(conn, run.endpoint, tag, tail):
            if opening:
                opening = False
                run.opening.release()
                open_streams.opened()
            count += found
            ended = ended or saw_end
        if count != words or not ended:
            # an error event's code and message, or what the stream had and how its last read ended
            last = tail[0].decode(errors="replace") if tail else "nothing"
            error = _ERROR.search(last)
            kind = f"{count}/{words} deltas, end {ended}: {last[-160:]}"
            errors[f"error event: {error[1]}: {error[2]}" if error else f"incomplete stream ({kind})"] += 1
    except Exception as exc:
        errors[f"{type(exc).__name__}: {str(exc)[:80]}"] += 1
    finally:
        if opening:
            run.opening.release()
            open_streams.settle()
        else:
            open_streams.active -= 1
        await conn.close()


def _fd_room(pid: int, sockets: int) -> int | None:
    """How many more streams of `sockets` descriptors each the process's descriptor limit leaves room for."""
    limit = fd_limit(pid)
    return None if limit is None else max(0, (limit - open_fds(pid) - FD_RESERVE) // sockets)


async def _upstream(b: Bench, path: str) -> None:
    """Tell the drip upstream to hold the streams' ends, or to release them (bench/upstream_server.py)."""
    async with Connection(f"http://127.0.0.1:{b.stack.remote_upstream_port}") as conn:
        response = await conn.request("POST", path)
    if response.status != 200:
        raise RuntimeError(f"upstream {path}: status {response.status}")


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
    b: Bench, run: _Run, open_streams: _OpenStreams, errors: Counter[str], release: bool
) -> tuple[float, int]:
    """Open the streams; hold drip streams `many_hold_seconds` once all opened, then let the upstream end them
    (echo-slow ones end by themselves): the seconds they took to open, and Redis's clients then."""
    started = time.monotonic()
    drips = asyncio.gather(*(_drip(run, i, open_streams, errors) for i in range(run.streams)))
    try:
        await _settled(open_streams)
        opened_in = time.monotonic() - started
        redis_clients = int((await b.redis.info("clients"))["connected_clients"])
        if release:
            await asyncio.sleep(b.plan.many_hold_seconds)
            await _upstream(b, f"/drip/release?per_second={b.plan.many_end_per_second}")
        await drips
    except BaseException:
        drips.cancel()
        raise
    return opened_in, redis_clients


async def _many(b: Bench, endpoint: Endpoint, wanted: int, echo: bool) -> dict[str, Any]:
    """`wanted` streams, or as many as the serving process's descriptors can hold, all open at once: of
    echo-slow (one socket each in the web process) or through the drip upstream (two)."""
    pids, sockets = endpoint.server.serving_pids(), 1 if echo else 2
    room = min((r for r in (_fd_room(pid, sockets) for pid in pids) if r is not None), default=None)
    streams = wanted if room is None else min(wanted, room)
    plan = b.plan
    words = _EchoWords(plan, streams) if echo else None
    shape: Shape = words or (lambda index: (f"many{index}", plan.drip_words))
    run = _Run(endpoint, streams, plan.many_open_per_second, shape, asyncio.Semaphore(plan.many_opening))
    errors: Counter[str] = Counter()
    open_streams = _OpenStreams(streams)
    if not echo:
        await _upstream(b, "/drip/hold")
    redis_idle = int((await b.redis.info("clients"))["connected_clients"])
    peaks = _Peaks(pids)
    sampler = asyncio.create_task(peaks.sample())
    started, cpu_before = time.monotonic(), cpu_seconds(pids)
    try:
        opened_in, redis_clients = await _open_hold_end(b, run, open_streams, errors, release=not echo)
    finally:
        peaks.done.set()
        await sampler
    wall, cpu = time.monotonic() - started, cpu_seconds(pids) - cpu_before
    busiest = max(pids, key=lambda pid: peaks.peak[pid])  # of several processes, the streams' one
    idle, peak = peaks.idle[busiest], peaks.peak[busiest]
    given = words.given if words else [plan.drip_words]
    return {
        "wanted": wanted,
        "streams": streams,
        "sockets_per_stream": sockets,
        "fd_limit": fd_limit(busiest),
        "deltas_per_stream": [min(given, default=0), max(given, default=0)],
        "errors": sum(errors.values()),
        "error_kinds": dict(errors),
        "peak_concurrent": open_streams.peak,
        "open_seconds": round(opened_in, 2),
        "seconds": round(wall, 2),
        "rss_idle_mb": round(idle / 2**20, 1),
        "rss_peak_mb": round(peak / 2**20, 1),
        "rss_kb_per_stream": round((peak - idle) / 1024 / max(1, open_streams.peak), 1),
        "fds_idle": peaks.idle_fds[busiest],
        "fds_peak": peaks.peak_fds[busiest],
        # the upstream connections the web process keeps for reuse once the streams have ended
        "fds_after": open_fds(busiest),
        "redis_clients_idle": redis_idle,
        "redis_clients_all_open": redis_clients,
        "server_cores": round(cpu / wall, 3),
        "server_cpu_ms_per_stream": round(cpu * 1000 / max(1, streams), 2),
    }


def _config(b: Bench) -> str:
    """The IX_CONFIG of this scenario's servers: the defaults but for the connections one may hold (every
    stream is one; more wait in the listen backlog) and echo-slow's word delay."""
    path = b.workdir / "many-server.toml"
    connections = f"[http]\nmax_connections = {b.plan.many_streams + 1000}\n"
    path.write_text(connections + f"[echo]\nslow_word_delay_ms = {b.plan.many_echo_word_delay_ms}\n")
    return str(path)


async def _fresh_server(b: Bench, name: str, model: str, echo: bool) -> dict[str, Any]:
    """One variant on a server started for it (a fresh process's idle RSS), stopped by a SIGTERM to its
    launcher first: granian's web process, which the bench's SIGTERM to the group also reaches, was stuck
    in its signal handler in 3 of 4 runs after the drip streams, until SIGKILL 15 s later."""
    server = await b.stack.start_server(name, 1, IX_CONFIG=_config(b))
    try:
        return {"model": model, **await _many(b, create_endpoint(server, model), b.plan.many_streams, echo)}
    finally:
        if (launcher := server.child.proc) is not None:
            with contextlib.suppress(ProcessLookupError, subprocess.TimeoutExpired):
                launcher.send_signal(signal.SIGTERM)
                await asyncio.to_thread(launcher.wait, 15)
        await asyncio.to_thread(b.stack.stop_children, [server.child])


async def many_streams(b: Bench) -> dict[str, Any]:
    plan = b.plan
    drip = {"BENCH_DRIP_WORDS": str(plan.drip_words), "BENCH_DRIP_INTERVAL": str(plan.drip_interval)}
    upstream = await b.stack.start_upstream("upstream-drip", **drip)
    try:
        echo_slow = await _fresh_server(b, "server-many-echo", ECHO, echo=True)
        through_upstream = await _fresh_server(b, "server-many-drip", DRIP, echo=False)
        relay = dataclasses.replace(relay_endpoint(b.one_baseline, DRIP), path="/remote/relay")
        baseline = await _many(b, relay, plan.many_baseline_streams, echo=False)
    finally:
        await asyncio.to_thread(b.stack.stop_children, [upstream])
    # the plan's settings of this scenario, which the table's note describes
    settings = {k: v for k, v in dataclasses.asdict(plan).items() if k.startswith(("many_", "drip_"))}
    return {"plan": settings, "echo_slow": echo_slow, "upstream": through_upstream, "baseline": baseline}
