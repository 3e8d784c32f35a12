"""Scenario 18 (issue 27): a streamGenerateContent through an OpenAI-compatible upstream, beside two
baselines in the same run.

The fake upstream runs in a process of its own (bench/upstream_server.py, as in scenario 8), `bench-up-fast`
routed to it. Three paths, wrk c16 on each, `cost_rounds` rounds of `cost_seconds` each, the order turning
every round, after a warm-up of each:
- `relay`: the bare relay (bench/baseline_app.py `/remote/relay`, litestar + httpx, no state), posting the
  very body our server sends the upstream for this turn (recorded: GET /last_request on the fake), its
  stream relayed;
- `generate`: `POST /v1beta/models/bench-up-fast:streamGenerateContent?alt=sse` with the prompt as
  `contents` (wrk reads every response to its end);
- `interaction`: the same turn as a `store: false` interaction stream (`POST /v1beta/interactions`).

Targets (targets.py): generate's throughput at least 0.7x the relay's, and its server CPU per request no
more than the interaction's (pooled over the rounds; each round's ratio is kept to show the spread).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ..stats import ratio
from ..wrk import Pids, WrkResult, pooled, run_wrk
from .common import API_KEY, CREATE, PROMPT, Bench, payload
from .upstream import MODEL, RELAY_ROUTES, _recorded_body

CONNECTIONS = 16
GENERATE = f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"


def _paths(b: Bench, recorded: bytes, fake: list[int]) -> dict[str, tuple[str, bytes, Pids]]:
    redis = b.stack.redis_pids()
    contents = json.dumps({"contents": [{"role": "user", "parts": [{"text": PROMPT}]}]}).encode()
    turn = payload(model=MODEL, input=PROMPT, stream=True, store=False)
    return {
        "relay": (b.baseline.url + RELAY_ROUTES["streamed"], recorded, Pids(b.baseline.pids(), redis, fake)),
        "generate": (b.server.url + GENERATE, contents, Pids(b.server.pids(), redis, fake)),
        "interaction": (b.server.url + CREATE, turn, Pids(b.server.pids(), redis, fake)),
    }


async def _wrk(b: Bench, path: tuple[str, bytes, Pids], seconds: float) -> WrkResult:
    url, body, pids = path
    return await run_wrk(
        url, body, api_key=API_KEY, connections=CONNECTIONS, seconds=seconds, pids=pids, workdir=b.workdir
    )


async def generate_stream(b: Bench) -> dict[str, Any]:
    upstream = await b.stack.start_upstream()
    try:
        recorded = await _recorded_body(b, {"stream": True, "store": False})
        paths = _paths(b, recorded, upstream.pids())
        for path in paths.values():
            await _wrk(b, path, 1)
        runs: dict[str, list[WrkResult]] = {name: [] for name in paths}
        for index in range(b.plan.cost_rounds):
            order = list(paths) if index % 2 == 0 else list(reversed(paths))
            for name in order:
                runs[name].append(await _wrk(b, paths[name], b.plan.cost_seconds))
    finally:
        await asyncio.to_thread(b.stack.stop_children, [upstream])
    pools = {name: pooled(results) for name, results in runs.items()}
    generate, relay, turn = pools["generate"], pools["relay"], pools["interaction"]
    return {
        **pools,
        "connections": CONNECTIONS,
        "rounds": b.plan.cost_rounds,
        "seconds_per_run": b.plan.cost_seconds,
        "rps_vs_relay": ratio(generate["rps"], relay["rps"]),
        "cpu_vs_interaction": ratio(generate["server_cpu_ms_per_req"], turn["server_cpu_ms_per_req"]),
        "cpu_vs_interaction_by_round": [
            ratio(g.server_cpu_ms, i.server_cpu_ms)
            for g, i in zip(runs["generate"], runs["interaction"], strict=True)
        ],
    }
