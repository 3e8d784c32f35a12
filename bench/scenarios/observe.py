"""Scenario 10 (issue 13), what observability costs: stored creates on two servers of the scenario's own, one
as shipped (metrics and the access log on) and one with `METRICS=0 ACCESS_LOG=0`, everything else alike
(one web process each, the stack's Redis and workers).

Two paths: the `echo` stored create and the stored create through the upstream process (`bench-up-fast`,
as in scenario 8). The machine is shared and noisy, so the two servers take turns: `cost_rounds` rounds of
one wrk run of `cost_seconds` at c16 on each, the order swapped every round so that neither always runs
second. Server CPU per request is read from /proc as in scenario 1 (all the server's processes over the
run). Each round gives an on/off ratio; the target reads their median, which one run disturbed by the rest
of the machine moves little. Beside it, both servers' figures pooled over the rounds (CPU seconds /
requests, requests / seconds).

Tried and left: the two servers loaded at once, each by its own wrk, so that both see the same moments of
the machine. Their CPU per request varied less from run to run, but the scheduler gave one server 1.5 times
the other's throughput, so the throughputs could not be compared.
"""

from __future__ import annotations

import asyncio
import statistics
from typing import Any

from ..procs import WebServer
from ..stats import ratio
from ..wrk import WrkResult, pooled
from .common import PROMPT, Bench
from .upstream import MODEL as UPSTREAM_MODEL

#: the two servers, as started: what is switched off in the second
SERVERS: dict[str, dict[str, str]] = {"on": {}, "off": {"METRICS": "0", "ACCESS_LOG": "0"}}
#: the creates measured, stored (the default) and not streamed
PATHS: dict[str, dict[str, Any]] = {
    "echo": {"model": "echo", "input": PROMPT},
    "upstream": {"model": UPSTREAM_MODEL, "input": PROMPT},
}
CONNECTIONS = 16


async def _path(b: Bench, servers: dict[str, WebServer], body: dict[str, Any]) -> dict[str, Any]:
    """The two servers taking turns on one path; `on` as ratios of `off`."""
    # warm up: pools, scripts, caches (a new server's first seconds cost up to 1.5x the CPU per request)
    for server in servers.values():
        await b.wrk(server, body, CONNECTIONS, 2)
    runs: dict[str, list[WrkResult]] = {name: [] for name in servers}
    for index in range(b.plan.cost_rounds):
        order = list(servers) if index % 2 == 0 else list(reversed(servers))
        for name in order:
            runs[name].append(await b.wrk(servers[name], body, CONNECTIONS, b.plan.cost_seconds))
    on, off = pooled(runs["on"]), pooled(runs["off"])
    rounds = [ratio(a.server_cpu_ms, z.server_cpu_ms) for a, z in zip(runs["on"], runs["off"], strict=True)]
    known = [r for r in rounds if r is not None]
    return {
        "on": on,
        "off": off,
        "cpu_on_vs_off": ratio(on["server_cpu_ms_per_req"], off["server_cpu_ms_per_req"]),
        "rps_on_vs_off": ratio(on["rps"], off["rps"]),
        "cpu_on_vs_off_by_round": rounds,
        "cpu_on_vs_off_median_round": round(statistics.median(known), 3) if known else None,
    }


async def observability_cost(b: Bench) -> dict[str, Any]:
    processes = b.server.processes
    started, upstream = await asyncio.gather(
        asyncio.gather(
            *(b.stack.start_server(f"server-{name}", processes, **env) for name, env in SERVERS.items())
        ),
        b.stack.start_upstream(),
    )
    servers = dict(zip(SERVERS, started, strict=True))
    try:
        paths = {name: await _path(b, servers, body) for name, body in PATHS.items()}
    finally:
        children = [server.child for server in servers.values()] + [upstream]
        await asyncio.to_thread(b.stack.stop_children, children)
    return {
        "connections": CONNECTIONS,
        "seconds_per_run": b.plan.cost_seconds,
        "rounds": b.plan.cost_rounds,
        "switched_off": SERVERS["off"],
        "by_path": paths,
    }
