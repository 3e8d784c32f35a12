"""Scenario 20 (issue 31): what a create costs Redis in commands and round trips, read from Redis itself.

Three paths, each with wrk at c16 and at c1: the baseline's create (litestar + one `SET`), a stored `echo`
create, and a stored create through the upstream process (`bench-up-fast`, scenario 8's). Each wrk run lies
between two readings of Redis's INFO (`stats` and `commandstats`, redis_watch.counters), and is followed by
an idle window of the same length whose deltas are taken off: the workers' waits and heartbeats and the web
processes' timers are nobody's create.

Which count is a round trip: Redis 7.0 keeps no count of commands or bytes per client (CLIENT LIST and
CLIENT INFO show a client's last command only), and `io_threaded_reads_processed` counts only with I/O
threads, which are off. `total_reads_processed` counts every read of a client's socket: a client that waits
for its answers before it writes again (a create's every Redis call is awaited) costs Redis one read per
round trip, its commands a few KB at most, within one read of Redis's 16 KB buffer. So at c1, with one
create in flight at a time, reads per create are its round trips; at c16 the pipelined client of the
server's store writes the calls of many creates in one write (one per loop turn), so reads per create there
are what Redis pays, fewer than a create's round trips. Commands are commandstats' calls, the commands
that scripts issue included (as `total_commands_processed` counts them); `evalsha` and `eval` are the
scripts run.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from redis.asyncio import Redis

from ..client import Connection
from ..procs import WebServer
from ..redis_watch import Counters, counters
from ..wrk import Pids, WrkResult, run_wrk
from .common import API_KEY, CREATE, HEADERS, PROMPT, Bench, payload
from .upstream import MODEL

#: the paths: the server answering, and the model of the create (the baseline takes the same body)
PATHS: dict[str, str] = {"baseline": "echo", "echo": "echo", "upstream": MODEL}
CONNECTIONS = (16, 1)
#: after wrk stops, the creates it left in flight (16 at most, not in its count) end before the window's
#: last reading, so that their commands count with the run (at most 0.3 % of a few thousand creates too
#: many) and not in the idle twin, which took them off (in one run through the upstream, a whole c16 of
#: them: 0.07 of 30 commands a create)
DRAIN_SECONDS = 0.5
#: what running a script counts as, in commandstats
SCRIPTS = frozenset({"evalsha", "eval", "evalsha_ro", "eval_ro", "fcall", "fcall_ro"})


def _server(b: Bench, path: str) -> WebServer:
    return b.baseline if path == "baseline" else b.server


async def _completes(b: Bench, path: str) -> None:
    """One create of the path answers a completed interaction (a turn the upstream refused answers 200 too,
    as a failed one, and its Redis calls would be another path's)."""
    async with Connection(_server(b, path).url, HEADERS) as conn:
        answer = await conn.request("POST", CREATE, payload(model=PATHS[path], input=PROMPT))
    if answer.status != 200 or b'"status":"completed"' not in answer.body:
        raise RuntimeError(f"a {path} create answered {answer.status}: {answer.body[:300]!r}")


async def _wrk(b: Bench, path: str, connections: int, seconds: float) -> WrkResult:
    server = _server(b, path)
    return await run_wrk(
        server.url + CREATE,
        json.dumps({"model": PATHS[path], "input": PROMPT}).encode(),
        api_key=API_KEY,
        connections=connections,
        seconds=seconds,
        pids=Pids(server.pids(), b.stack.redis_pids()),
        workdir=b.workdir,
    )


def _per_create(load: Counters, idle: Counters, creates: int) -> dict[str, Any]:
    """What the creates cost Redis, the idle window's deltas taken off, per create."""
    n = max(1, creates)

    def each(value: float) -> float:
        return round(value / n, 3) + 0.0  # + 0.0: a zero rounded from below is not shown as -0.0

    stats = {name: each(load.stats[name] - idle.stats[name]) for name in load.stats}
    by_command = Counter(load.calls)
    by_command.subtract(idle.calls)
    scripts = sum(by_command[name] for name in SCRIPTS)
    return {
        "commands": each(load.commands - idle.commands),
        "commands_processed": stats["total_commands_processed"],
        "scripts": each(scripts),
        "reads": stats["total_reads_processed"],
        "writes": stats["total_writes_processed"],
        "net_in_bytes": stats["total_net_input_bytes"],
        "net_out_bytes": stats["total_net_output_bytes"],
        "by_command": {name: each(calls) for name, calls in by_command.most_common() if calls > 0},
        "idle_commands": idle.commands,
        "idle_reads": idle.stats["total_reads_processed"],
    }


async def window(redis: Redis, load: Callable[[], Awaitable[WrkResult]]) -> dict[str, Any]:
    """One wrk run (`load`) between two readings of Redis, then an idle window as long, subtracted
    (scenarios 20 and 23)."""
    before, began = await counters(redis), time.monotonic()
    result = await load()
    await asyncio.sleep(DRAIN_SECONDS)
    spent, wall = await counters(redis) - before, time.monotonic() - began
    before = await counters(redis)
    await asyncio.sleep(wall)
    idle = await counters(redis) - before
    return {
        "creates": result.requests,
        "rps": round(result.rps, 1),
        "errors": result.errors,
        "server_cpu_ms": round(result.server_cpu_ms, 4),
        "window_seconds": round(wall, 2),
        **_per_create(spent, idle, result.requests),
    }


async def round_trips(b: Bench) -> dict[str, Any]:
    upstream = await b.stack.start_upstream()
    rows: dict[str, dict[str, Any]] = {}
    try:
        for path in PATHS:
            await _completes(b, path)
            await _wrk(b, path, 16, 1)  # warm up: pools, scripts, caches
        for connections in CONNECTIONS:
            seconds = b.plan.trips_seconds if connections > 1 else b.plan.trips_c1_seconds
            rows[f"c{connections}"] = {
                path: await window(b.redis, functools.partial(_wrk, b, path, connections, seconds))
                for path in PATHS
            }
    finally:
        await asyncio.to_thread(b.stack.stop_children, [upstream])
    return {"paths": PATHS, "by_concurrency": rows}
