"""Scenario 17 (issue 26): the same stored create and the same stream through OpenAI's Responses API
(`/v1/responses`) and Google's Interactions API (`/v1beta/interactions`), side by side on one server.

- create: scenario 1's request (`{"model": "echo", "input": PROMPT}`, stored, no stream; the same body
  is a valid create in both dialects), wrk c16 on the stack's server. The two paths take turns:
  `cost_rounds` rounds of one run of `cost_seconds` on each, the order swapped every round, after a 2 s
  warm-up of each (as scenario 10). Server CPU per create from /proc (all of the server's processes);
  each round gives a Responses / Interactions ratio, and the target reads their median.
- stream: scenario 5's flood through one web process (`flood_streams` stored streamed creates at once,
  `bench-flood`: `flood_deltas` deltas each from the fake upstream at full speed), counted at the client:
  `event: step.delta` on the Interactions stream, `event: response.output_text.delta` on the Responses
  one, to `interaction.completed` and `data: [DONE]`. The paths take turns for 4 times `cost_rounds` rounds;
  each round gives a Responses / Interactions ratio of events per second (from each flood's first delta
  to its last), and the target reads their median; beside it, events per second pooled over the rounds
  and the web process's CPU per event.
"""

from __future__ import annotations

import asyncio
import functools
import json
import statistics
import time
from typing import Any

from ..client import Connection
from ..procs import WebServer, cpu_seconds, own_cpu_seconds
from ..stats import ratio
from ..wrk import Pids, WrkResult, run_wrk
from .common import API_KEY, CREATE, HEADERS, PROMPT, Bench, payload
from .streaming import COMPLETED, DELTA, Endpoint, stream
from .turns import cpu_compared, take_turns

RESPONSES = "/v1/responses"
#: the two dialects' paths, in the order each round starts with
PATHS = {"interactions": CREATE, "responses": RESPONSES}
CONNECTIONS = 16
RESPONSE_DELTA = b"event: response.output_text.delta\n"
RESPONSE_DONE = b"data: [DONE]"


def _endpoints(server: WebServer) -> dict[str, Endpoint]:
    def body(tag: str) -> bytes:
        return payload(model="bench-flood", input=f"{tag} go", stream=True)

    return {
        "interactions": Endpoint(server, CREATE, body, DELTA, COMPLETED),
        "responses": Endpoint(server, RESPONSES, body, RESPONSE_DELTA, RESPONSE_DONE),
    }


async def _wrk(b: Bench, path: str, seconds: float) -> WrkResult:
    return await run_wrk(
        b.server.url + path,
        json.dumps({"model": "echo", "input": PROMPT}).encode(),
        api_key=API_KEY,
        connections=CONNECTIONS,
        seconds=seconds,
        pids=Pids(b.server.pids(), b.stack.redis_pids()),
        workdir=b.workdir,
    )


async def _creates(b: Bench) -> dict[str, Any]:
    runs = {name: functools.partial(_wrk, b, path) for name, path in PATHS.items()}
    turns = await take_turns(runs, b.plan.cost_rounds, b.plan.cost_seconds)
    return cpu_compared(turns, "responses", "interactions")


async def _flood(b: Bench, endpoint: Endpoint, label: str) -> dict[str, Any]:
    """One flood: `flood_streams` streams at once; the events, their window and the web process's CPU."""
    firsts, lasts, counts, ended = [], [], [], []

    async def one(index: int) -> None:
        async with Connection(endpoint.server.url, HEADERS) as conn:
            first, last, count, end = None, 0.0, 0, False
            async for now, found, done in stream(conn, endpoint, f"{label}{index}"):
                if found:
                    first, last = first or now, now
                    count += found
                end = end or done
            firsts.append(first or last)
            lasts.append(last)
            counts.append(count)
            ended.append(end)

    pids = endpoint.server.serving_pids()
    cpu_before, own_before, wall_before = cpu_seconds(pids), own_cpu_seconds(), time.monotonic()
    await asyncio.gather(*(one(i) for i in range(b.plan.flood_streams)))
    return {
        "events": sum(counts),
        "seconds": max(lasts) - min(firsts),
        "wall": time.monotonic() - wall_before,
        "cpu": cpu_seconds(pids) - cpu_before,
        "bench_cpu": own_cpu_seconds() - own_before,
        "incomplete": sum(1 for count, end in zip(counts, ended, strict=True) if not end or not count),
    }


async def _streams(b: Bench) -> dict[str, Any]:
    endpoints = _endpoints(b.one_server)
    floods: dict[str, list[dict[str, Any]]] = {name: [] for name in endpoints}
    # a flood lasts about half a second, and the pairs' ratios spread over 0.7-1.1 on a quiet machine:
    # 24 pairs, each pair's ratio read, so that a busy moment of the machine moves one pair and not the
    # figure (three pooled rounds moved it by 0.1 between runs, six paired ones by 0.15)
    rounds = max(1, 4 * b.plan.cost_rounds)
    for index in range(rounds):
        order = list(endpoints) if index % 2 == 0 else list(reversed(endpoints))
        for name in order:
            floods[name].append(await _flood(b, endpoints[name], f"dialect{name}{index}-"))
    out: dict[str, Any] = {"rounds": rounds}
    for name, runs in floods.items():
        events, seconds, wall, cpu, bench_cpu = (
            sum(run[key] for run in runs) for key in ("events", "seconds", "wall", "cpu", "bench_cpu")
        )
        out[name] = {
            "events": events,
            "expected": b.plan.flood_streams * b.plan.flood_deltas * rounds,
            "incomplete_streams": sum(run["incomplete"] for run in runs),
            "events_per_s": round(events / seconds, 1) if seconds > 0 else None,
            "server_cpu_us_per_event": round(cpu / events * 1e6, 2) if events else None,
            "server_cores": round(cpu / wall, 3) if wall else None,
            "bench_process_cores": round(bench_cpu / wall, 3) if wall else None,
            "runs_events_per_s": [round(r["events"] / r["seconds"], 1) for r in runs if r["seconds"] > 0],
        }
    out["events_ratio"] = ratio(out["responses"]["events_per_s"], out["interactions"]["events_per_s"])
    by_round = [
        ratio(r["events"] / r["seconds"], i["events"] / i["seconds"])
        for r, i in zip(floods["responses"], floods["interactions"], strict=True)
        if r["seconds"] > 0 and i["seconds"] > 0
    ]
    known = [value for value in by_round if value is not None]
    out["events_ratio_by_round"] = by_round
    out["events_ratio_median_round"] = round(statistics.median(known), 3) if known else None
    out["cpu_per_event_ratio"] = ratio(
        out["responses"]["server_cpu_us_per_event"], out["interactions"]["server_cpu_us_per_event"]
    )
    return out


async def dialect_paths(b: Bench) -> dict[str, Any]:
    started = time.monotonic()
    creates = await _creates(b)
    streams = await _streams(b)
    return {
        "connections": CONNECTIONS,
        "seconds_per_run": b.plan.cost_seconds,
        "rounds": b.plan.cost_rounds,
        "flood_streams": b.plan.flood_streams,
        "flood_deltas": b.plan.flood_deltas,
        "create": creates,
        "stream": streams,
        "seconds": round(time.monotonic() - started, 1),
    }
