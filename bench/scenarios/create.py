"""Scenarios 1 and 2, both with wrk on the create endpoint: create throughput beside the baseline, and a new
turn after N stored turns."""

from __future__ import annotations

import time
from typing import Any

from ..client import Connection
from ..procs import WebServer
from ..stats import ratio
from ..wrk import WrkResult
from .common import CREATE, HEADERS, PROMPT, Bench, json_object, payload

# -- 1. create ---------------------------------------------------------------------------------------------


async def create_throughput(b: Bench) -> dict[str, Any]:
    plan = b.plan
    variants: dict[str, tuple[WebServer, dict[str, Any]]] = {
        "baseline": (b.baseline, {"model": "echo", "input": PROMPT}),
        "store_true": (b.server, {"model": "echo", "input": PROMPT}),
        "store_false": (b.server, {"model": "echo", "input": PROMPT, "store": False}),
    }
    for server, body in variants.values():  # warm up: pools, scripts, caches
        await b.wrk(server, body, 16, 1)
    rows: dict[str, dict[str, Any]] = {}
    for connections in plan.concurrency:
        best: dict[str, WrkResult] = {}
        for _ in range(plan.wrk_repeats):
            for name, (server, body) in variants.items():
                result = await b.wrk(server, body, connections, plan.wrk_seconds)
                if name not in best or result.rps > best[name].rps:
                    best[name] = result
        base = best["baseline"]
        row: dict[str, Any] = {"baseline": base.as_dict()}
        for name in ("store_true", "store_false"):
            ours = best[name]
            row[name] = {
                **ours.as_dict(),
                "rps_ratio": ratio(ours.rps, base.rps),
                "p50_added_ms": round(ours.p50_ms - base.p50_ms, 3),
                "p50_ratio": ratio(ours.p50_ms, base.p50_ms),
                "p99_ratio": ratio(ours.p99_ms, base.p99_ms),
                "cpu_ratio": ratio(ours.server_cpu_ms, base.server_cpu_ms),
            }
        rows[f"c{connections}"] = row
        if connections == 1:
            b.baseline_wrk_p50_ms = base.p50_ms
    return {
        "prompt_bytes": len(PROMPT.encode()),
        "seconds_per_run": plan.wrk_seconds,
        "best_of": plan.wrk_repeats,
        "by_concurrency": rows,
    }


# -- 2. chain depth ----------------------------------------------------------------------------------------


async def chain_depth(b: Bench) -> dict[str, Any]:
    plan = b.plan
    longest = max(plan.depths)
    ids: list[str] = []
    started = time.monotonic()
    async with Connection(b.server.url, HEADERS) as conn:
        previous: str | None = None
        for turn in range(longest):
            fields: dict[str, Any] = {"model": "echo", "input": f"turn {turn} of the bench chain"}
            if previous:
                fields["previous_interaction_id"] = previous
            response = await conn.request("POST", CREATE, payload(**fields))
            if response.status != 200:
                raise RuntimeError(f"building the chain failed at turn {turn}: {response.body[:300]!r}")
            previous = json_object(response.body)["id"]
            ids.append(previous)
    build_seconds = time.monotonic() - started
    rows: dict[str, dict[str, Any]] = {}
    for depth in plan.depths:
        body = {"model": "echo", "input": "and the next turn", "previous_interaction_id": ids[depth - 1]}
        result = await b.wrk(b.server, body, 1, plan.depth_seconds)
        rows[str(depth)] = result.as_dict()
    first = rows[str(plan.depths[0])]
    for row in rows.values():
        row["p50_vs_depth1"] = ratio(row["p50_ms"], first["p50_ms"])
        row["p50_vs_baseline"] = ratio(row["p50_ms"], b.baseline_wrk_p50_ms)
    return {
        "build_seconds": round(build_seconds, 2),
        "baseline_p50_ms": b.baseline_wrk_p50_ms,
        "by_depth": rows,
    }
