"""Scenario 23 (issue 30): what a tenant's limits cost a create, on a server of the scenario's own.

Its server.toml (IX_CONFIG) gives one tenant every limit ([auth.tenant_limits."<tenant>"]; in open mode a
tenant is the first 32 hex digits of its key's sha256), so high that nothing is refused, and no other
tenant any. Two API keys, that tenant's and another's, post the same stored echo create (scenario 1's) to
that one server: the unlimited key's create makes no Redis call for limits (server/limits/quota.py), the
limited key's makes one limits.lua call before anything else, and its run counts its tokens (a meter).

- CPU: wrk c16, the two keys taking turns (turns.py: a 2 s warm-up each, then twice `cost_rounds` rounds
  of one run of `cost_seconds` on each, the order swapped every round); server CPU per create from /proc
  (all the server's processes), Redis's beside; each round gives a limited / unlimited ratio, the target
  reads their median.
- Redis: commands, scripts and round trips per create for each key at c16 and c1, read from Redis's INFO
  as scenario 20 reads them (trips.window: each wrk run less an idle window as long). At c1 a read is a
  round trip; the target reads the limited key's less the unlimited key's.

That the limits apply is checked, not assumed: after one create of each key, the limited tenant's request
rate (keys.request_rate, written by limits.lua only) is in Redis and the other tenant's is not. That
nothing was refused: a 429 is an error in wrk's count, and the server's ix_limit_refusals_total is read at
the end.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import time
from typing import Any

from server.store import keys
from server.store.limits import TenantLimits

from ..client import Connection
from ..procs import WebServer
from ..wrk import Pids, WrkResult, run_wrk
from .common import CREATE, PROMPT, Bench, payload
from .trips import CONNECTIONS, window
from .turns import cpu_compared, take_turns

#: the two tenants' keys, in the order each round starts with
KEYS = {"unlimited": "bench-limits-free", "limited": "bench-limits-capped"}
#: every limit of the limited tenant: far above what one server does in a minute or a day (some 2,000
#: creates a second of a hundred tokens or so), so that every check runs and none refuses
HIGH = 1_000_000_000
#: every limit there is (a limit added later is measured too)
LIMITS = TenantLimits.__struct_fields__
WRK_CONNECTIONS = 16
#: rounds per `cost_rounds`: on the shared 2-core machine one round's ratio spreads over 0.9-1.6x, so six
#: rounds' median moved by 0.16 between runs, against a target 0.05 above 1
ROUNDS_PER_COST_ROUND = 2
REFUSALS = "ix_limit_refusals_total"


def tenant_of(key: str) -> str:
    """A key's tenant in open mode (server/api/auth.py)."""
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def config() -> str:
    """The server.toml of this scenario's server: the shipped defaults but the limited tenant's limits."""
    lines = [f'[auth.tenant_limits."{tenant_of(KEYS["limited"])}"]']
    lines += [f"{name} = {HIGH}" for name in LIMITS]
    return "\n".join(lines) + "\n"


async def _start(b: Bench) -> WebServer:
    path = b.workdir / "limits.toml"
    path.write_text(config())
    # foreground echo creates run in the web process: the stack's workers (its queue) make it ready
    return await b.stack.start_server("server-limits", 1, IX_CONFIG=str(path))


async def _wrk(b: Bench, server: WebServer, key: str, connections: int, seconds: float) -> WrkResult:
    return await run_wrk(
        server.url + CREATE,
        json.dumps({"model": "echo", "input": PROMPT}).encode(),
        api_key=key,
        connections=connections,
        seconds=seconds,
        pids=Pids(server.pids(), b.stack.redis_pids()),
        workdir=b.workdir,
    )


async def _applied(b: Bench, server: WebServer) -> None:
    """One create of each key completes, and only the limited tenant's was admitted by limits.lua."""
    for name, key in KEYS.items():
        headers = {"x-goog-api-key": key, "content-type": "application/json"}
        async with Connection(server.url, headers) as conn:
            answer = await conn.request("POST", CREATE, payload(model="echo", input=PROMPT))
        if answer.status != 200 or b'"status":"completed"' not in answer.body:
            raise RuntimeError(f"a create of the {name} key answered {answer.status}: {answer.body[:300]!r}")
        counted = bool(await b.redis.exists(keys.request_rate(tenant_of(key))))
        if counted != (name == "limited"):
            raise RuntimeError(f"the {name} tenant's request rate is {'' if counted else 'not '}in Redis")


async def _refusals(server: WebServer) -> float:
    """The requests the server's limits refused so far (its /metrics: one web process, its own count)."""
    async with Connection(server.url) as conn:
        answer = await conn.request("GET", "/metrics")
    total = 0.0
    for line in answer.body.decode().splitlines():
        if line.startswith(REFUSALS + "{") or line.startswith(REFUSALS + " "):
            total += float(line.rsplit(" ", 1)[1])
    return total


def _added(rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per create and concurrency, what the limited key's create costs Redis beyond the unlimited one's."""
    fields = ("commands", "scripts", "reads", "writes", "net_in_bytes")
    return {
        level: {f: round(keyed["limited"][f] - keyed["unlimited"][f], 3) + 0.0 for f in fields}
        for level, keyed in rows.items()
    }


async def _redis(b: Bench, server: WebServer) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for connections in CONNECTIONS:
        seconds = b.plan.trips_seconds if connections > 1 else b.plan.trips_c1_seconds
        rows[f"c{connections}"] = {
            name: await window(b.redis, functools.partial(_wrk, b, server, key, connections, seconds))
            for name, key in KEYS.items()
        }
    return rows


async def limits_cost(b: Bench) -> dict[str, Any]:
    started = time.monotonic()
    server = await _start(b)
    try:
        await _applied(b, server)
        runs = {name: functools.partial(_wrk, b, server, key, WRK_CONNECTIONS) for name, key in KEYS.items()}
        turns = await take_turns(runs, ROUNDS_PER_COST_ROUND * b.plan.cost_rounds, b.plan.cost_seconds)
        redis = await _redis(b, server)
        refused = round(await _refusals(server))
    finally:
        await asyncio.to_thread(b.stack.stop_children, [server.child])
    cpu = cpu_compared(turns, "limited", "unlimited")
    result: dict[str, Any] = {
        "limited_tenant": tenant_of(KEYS["limited"]),
        "limit": HIGH,
        "connections": WRK_CONNECTIONS,
        "rounds": ROUNDS_PER_COST_ROUND * b.plan.cost_rounds,
        "seconds_per_run": b.plan.cost_seconds,
        "cpu": cpu,
        "redis": redis,
        "added": _added(redis),
        "refused": refused,
        "seconds": round(time.monotonic() - started, 1),
    }
    errors = sum(cpu[name]["errors"] for name in KEYS)
    errors += sum(row[name]["errors"] for row in redis.values() for name in KEYS)
    if errors or refused:
        result["error"] = f"{errors} requests failed and {refused} were refused by a limit"
    return result
