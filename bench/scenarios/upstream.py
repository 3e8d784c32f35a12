"""Scenario 8, the path users pay: creates through an OpenAI-compatible upstream over real HTTP, the fake
upstream in a process of its own (bench/upstream_server.py), beside two baselines in the same run.

Three paths per mode, wrk on each in turn (best of `upstream_repeats`):
- `upstream`: wrk straight at the fake's chat-completions URL with the very body our server sends it
  (recorded from one create of the same mode: GET /last_request on the fake);
- `relay`: the bare relay, litestar + httpx and no state (bench/baseline_app.py): the same recorded body to
  `/remote/relay_once` (plain: the whole reply awaited, then answered) or `/remote/relay` (streamed);
- `ours`: the create, `{"model": "bench-up-fast", "input": PROMPT}`, stored, plain or `"stream": true`
  (wrk reads every response to its end).

The same turn through the `interactions` backend (`bench-ix-fast`: Google's Interactions API, whose call is
always a `stream: true` create, answered by the same process's `/v1beta/interactions`) at c16 only, ours
beside the bare relay of its own recorded call (the relay's routes with `?to=interactions`).

Background creates are measured one at a time with the Python client: create → `interaction.completed` read
on a follow stream (`GET …?stream=true`, opened as soon as the create answers), beside a foreground create
and a relay request with the same client.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..client import Connection
from ..procs import Child, cpu_seconds
from ..stats import distribution, ratio
from ..wrk import Pids, WrkResult, run_wrk
from .common import API_KEY, CREATE, HEADERS, PROMPT, Bench, json_object, payload
from .streaming import COMPLETED

#: routed to the upstream process by the bench's models.toml
MODEL = "bench-up-fast"
#: the create's extra fields, and the bare relay's route, of each wrk mode
MODES: dict[str, dict[str, Any]] = {"plain": {}, "streamed": {"stream": True}}
RELAY_ROUTES = {"plain": "/remote/relay_once", "streamed": "/remote/relay"}
#: routed to the same upstream process through the interactions backend, and the relay's query for its path
IX_MODEL = "bench-ix-fast"
IX_RELAY = "?to=interactions"
#: the interactions rows' concurrency, the one their targets read: both modes add about 30 s to a full run
IX_CONCURRENCY = (16,)


@dataclass(frozen=True)
class _Path:
    """Where wrk posts what, and whose CPU it counts."""

    url: str
    body: bytes
    pids: Pids


async def _recorded_body(b: Bench, extra: dict[str, Any], model: str = MODEL) -> bytes:
    """What our server sends the upstream for one create of this mode.

    The upstream keeps only the latest body, and the turns of the wrk run before (c64, whose clients left)
    may still be reaching it: a body that names another model is one of theirs, and the create is made again.
    """
    for _ in range(20):
        async with Connection(b.server.url, HEADERS) as conn:
            answer = await conn.request("POST", CREATE, payload(model=model, input=PROMPT, **extra))
        # a turn the backend could not read still answers 200 (a failed interaction): the rows would time it
        done = COMPLETED in answer.body if extra.get("stream") else b'"status":"completed"' in answer.body
        if answer.status != 200 or not done:
            raise RuntimeError(f"create through the upstream answered {answer.status}: {answer.body[:300]!r}")
        async with Connection(b.stack.remote_upstream_url) as conn:
            body = (await conn.request("GET", "/last_request")).body
        if b'"model":"%s"' % model.encode() in body:
            return body
        await asyncio.sleep(0.1)
    raise RuntimeError(f"the upstream's latest request is not of {model}: {body[:300]!r}")


def _paths(b: Bench, upstream: Child, mode: str, recorded: bytes, ix: bool = False) -> dict[str, _Path]:
    """The three paths of the chat backend's turn, or the interactions backend's relay and ours."""
    fake, redis = upstream.pids(), b.stack.redis_pids()
    model, query = (IX_MODEL, IX_RELAY) if ix else (MODEL, "")
    ours = payload(model=model, input=PROMPT, **MODES[mode])
    relay = b.baseline.url + RELAY_ROUTES[mode] + query
    paths = {
        "relay": _Path(relay, recorded, Pids(b.baseline.pids(), redis, fake)),
        "ours": _Path(b.server.url + CREATE, ours, Pids(b.server.pids(), redis, fake)),
    }
    if ix:
        return paths
    # the fake is the server under load here: its CPU is both columns
    return {"upstream": _Path(b.stack.remote_upstream_url, recorded, Pids(fake, redis, fake)), **paths}


async def _wrk(b: Bench, path: _Path, connections: int, seconds: float) -> WrkResult:
    return await run_wrk(
        path.url,
        path.body,
        api_key=API_KEY,
        connections=connections,
        seconds=seconds,
        pids=path.pids,
        workdir=b.workdir,
    )


def _row(best: dict[str, WrkResult]) -> dict[str, Any]:
    """One concurrency's figures, ours and the relay as ratios of the baselines (of the upstream alone only
    where it ran)."""
    relay, ours = best["relay"], best["ours"]
    row: dict[str, Any] = {
        "relay": relay.as_dict(),
        "ours": {
            **ours.as_dict(),
            "rps_vs_relay": ratio(ours.rps, relay.rps),
            "cpu_vs_relay": ratio(ours.server_cpu_ms, relay.server_cpu_ms),
            "p50_added_to_relay_ms": round(ours.p50_ms - relay.p50_ms, 3),
        },
    }
    up = best.get("upstream")
    if up is None:
        return row
    row["relay"]["rps_vs_upstream"] = ratio(relay.rps, up.rps)
    row["ours"]["rps_vs_upstream"] = ratio(ours.rps, up.rps)
    return {"upstream": up.as_dict(), **row}


async def _mode(b: Bench, paths: dict[str, _Path], concurrency: tuple[int, ...]) -> dict[str, Any]:
    """wrk on the paths at each concurrency, interleaved, best of `upstream_repeats`."""
    plan = b.plan
    for path in paths.values():  # warm up: pools, scripts, caches
        await _wrk(b, path, 16, 1)
    rows: dict[str, Any] = {}
    for connections in concurrency:
        best: dict[str, WrkResult] = {}
        for _ in range(plan.upstream_repeats):
            for name, path in paths.items():
                result = await _wrk(b, path, connections, plan.upstream_seconds)
                if name not in best or result.rps > best[name].rps:
                    best[name] = result
        rows[f"c{connections}"] = _row(best)
    return rows


async def _follow(conn: Connection, interaction_id: str) -> float | None:
    """When `interaction.completed` arrives on the interaction's follow stream (read to its end)."""
    await conn.send("GET", f"{CREATE}/{interaction_id}?stream=true")
    status, headers = await conn.head()
    if status != 200:
        await conn.body(headers)
        return None
    seen, tail = None, b""
    async for data in conn.chunks(headers):
        if seen is None and COMPLETED in tail + data:
            seen = time.monotonic()
        tail = data[-len(COMPLETED) :]
    return seen


Sample = Callable[[Connection], Awaitable[dict[str, float] | str]]


async def _sequential(b: Bench, url: str, sample: Sample, cpu_of: dict[str, list[int]]) -> dict[str, Any]:
    """`upstream_samples` samples one at a time on one connection: their timings as distributions, what
    went wrong, and the CPU per sample of the processes in `cpu_of`."""
    timings: dict[str, list[float]] = {}
    errors: Counter[str] = Counter()
    before = {name: cpu_seconds(pids) for name, pids in cpu_of.items()}
    async with Connection(url, HEADERS) as conn:
        for _ in range(b.plan.upstream_samples):
            result = await sample(conn)
            if isinstance(result, str):
                errors[result] += 1
            else:
                for name, seconds in result.items():
                    timings.setdefault(name, []).append(seconds)
            # a random pause: not in step with the workers' heartbeats or fallback polls
            await asyncio.sleep(random.uniform(0.002, 0.012))
    n = max(1, b.plan.upstream_samples - sum(errors.values()))
    cpu = {
        f"{name}_cpu_ms": round((cpu_seconds(pids) - before[name]) * 1000 / n, 3)
        for name, pids in cpu_of.items()
    }
    return {**{name: distribution(values) for name, values in timings.items()}, **cpu, "errors": dict(errors)}


def _request(path: str, body: bytes) -> Sample:
    """One request and its answer."""

    async def sample(conn: Connection) -> dict[str, float] | str:
        started = time.monotonic()
        response = await conn.request("POST", path, body)
        if response.status != 200:
            return f"status {response.status}"
        return {"request": time.monotonic() - started}

    return sample


async def _background_once(conn: Connection) -> dict[str, float] | str:
    """A background create, then its follow stream until `interaction.completed`."""
    started = time.monotonic()
    response = await conn.request("POST", CREATE, payload(model=MODEL, input=PROMPT, background=True))
    answered = time.monotonic()
    if response.status != 200:
        return f"create status {response.status}"
    completed = await _follow(conn, json_object(response.body)["id"])
    if completed is None:
        return "no interaction.completed on the follow stream"
    return {"create_response": answered - started, "create_to_completed": completed - started}


async def _background(b: Bench, upstream: Child, recorded: bytes) -> dict[str, Any]:
    """Background creates beside a foreground create and a bare relay request, one at a time each."""
    workers = [pid for child in b.stack.children if child.name.startswith("worker-") for pid in child.pids()]
    fake = upstream.pids()
    relay = await _sequential(b, b.baseline.url, _request(RELAY_ROUTES["plain"], recorded), {})
    foreground = await _sequential(
        b, b.server.url, _request(CREATE, payload(model=MODEL, input=PROMPT)), {"web": b.server.pids()}
    )
    cpu_of = {"web": b.server.pids(), "worker": workers, "upstream": fake}
    background = await _sequential(b, b.server.url, _background_once, cpu_of)
    relay_p50 = relay["request"]["p50_ms"]
    return {
        "relay_request": relay,
        "foreground_create": foreground,
        "background": background,
        "completed_p50_vs_relay": ratio(_p50(background, "create_to_completed"), relay_p50),
        "foreground_p50_vs_relay": ratio(_p50(foreground, "request"), relay_p50),
    }


def _p50(result: dict[str, Any], name: str) -> float | None:
    value = result.get(name)
    return value["p50_ms"] if isinstance(value, dict) else None


async def _modes(b: Bench, upstream: Child, ix: bool) -> tuple[dict[str, Any], dict[str, bytes]]:
    """Both wrk modes of one backend's turn: the rows, and the bodies the upstream got."""
    modes: dict[str, Any] = {}
    recorded: dict[str, bytes] = {}
    concurrency = IX_CONCURRENCY if ix else b.plan.upstream_concurrency
    for mode, extra in MODES.items():
        recorded[mode] = await _recorded_body(b, extra, IX_MODEL if ix else MODEL)
        modes[mode] = await _mode(b, _paths(b, upstream, mode, recorded[mode], ix), concurrency)
    rows = {
        "model": IX_MODEL if ix else MODEL,
        "upstream_body_bytes": {mode: len(body) for mode, body in recorded.items()},
        "upstream_body_streams": {mode: b'"stream":true' in body for mode, body in recorded.items()},
        "by_mode": modes,
    }
    return rows, recorded


async def upstream_path(b: Bench) -> dict[str, Any]:
    upstream = await b.stack.start_upstream()
    try:
        chat, recorded = await _modes(b, upstream, ix=False)
        interactions, _ = await _modes(b, upstream, ix=True)
        background = await _background(b, upstream, recorded["plain"])
    finally:
        await asyncio.to_thread(b.stack.stop_children, [upstream])
    return {
        **chat,
        "seconds_per_run": b.plan.upstream_seconds,
        "best_of": b.plan.upstream_repeats,
        "background": background,
        "interactions": interactions,
    }
