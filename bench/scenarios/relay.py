"""Scenario 5, streaming through one web process: the relay rate of a few streams at the upstream's full
speed, and the time from the upstream's first token to the client's first delta, beside the baseline's byte
relay of the same upstream stream."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ..client import Connection
from ..procs import cpu_seconds, own_cpu_seconds
from ..stats import distribution, ratio
from .common import HEADERS, Bench
from .streaming import Endpoint, create_endpoint, relay_endpoint, stream

#: ours, store=true and store=false
_STORES = ("store_true", "store_false")


def _endpoints(b: Bench, model: str) -> dict[str, Endpoint]:
    """The three paths of the scenario, in the order they are measured and reported."""
    return {
        "store_true": create_endpoint(b.one_server, model),
        "store_false": create_endpoint(b.one_server, model, store=False),
        "baseline": relay_endpoint(b.one_baseline, model),
    }


async def _flood(b: Bench, endpoint: Endpoint) -> dict[str, Any]:
    """`flood_streams` streams at once at the upstream's full speed: deltas per second at the client, from
    the first delta of any stream to the last, and the CPU it took."""
    plan = b.plan
    firsts, lasts, counts = [], [], []

    async def one(index: int) -> None:
        async with Connection(endpoint.server.url, HEADERS) as conn:
            first, last, count = None, 0.0, 0
            async for now, found, _ended in stream(conn, endpoint, f"flood{index}"):
                if found:
                    first = first or now
                    last = now
                    count += found
            firsts.append(first or last)
            lasts.append(last)
            counts.append(count)

    pids = endpoint.server.serving_pids()
    cpu_before, own_before, wall_before = cpu_seconds(pids), own_cpu_seconds(), time.monotonic()
    await asyncio.gather(*(one(i) for i in range(plan.flood_streams)))
    wall = time.monotonic() - wall_before
    server_cpu, own_cpu = cpu_seconds(pids) - cpu_before, own_cpu_seconds() - own_before
    window = max(lasts) - min(firsts)
    total = sum(counts)
    return {
        "streams": plan.flood_streams,
        "deltas": total,
        "expected": plan.flood_deltas * plan.flood_streams,
        "seconds": round(window, 3),
        "events_per_s": round(total / window, 1) if window > 0 else None,
        "server_cpu_us_per_event": round(server_cpu / total * 1e6, 2) if total else None,
        "server_cores": round(server_cpu / wall, 3),
        "bench_process_cores": round(own_cpu / wall, 3),
    }


async def _relay_rates(b: Bench) -> dict[str, dict[str, Any]]:
    """One flood per path, one path at a time, with ours as a ratio of the baseline."""
    flood = {name: await _flood(b, endpoint) for name, endpoint in _endpoints(b, "bench-flood").items()}
    for name in _STORES:
        flood[name]["ratio"] = ratio(flood[name]["events_per_s"], flood["baseline"]["events_per_s"])
    return flood


async def _first_event(b: Bench, endpoint: Endpoint, tag: str) -> tuple[float, float]:
    """(upstream's first chunk -> first delta at the client, request sent -> first delta)."""
    async with Connection(endpoint.server.url, HEADERS) as conn:
        started = time.monotonic()
        seen: float | None = None
        async for now, found, _ended in stream(conn, endpoint, tag):
            if found and seen is None:
                seen = now
    exchange = b.upstream.exchanges.pop(tag)
    if seen is None or exchange.first_chunk_at is None:
        raise RuntimeError(f"no delta in stream {tag}")
    return seen - exchange.first_chunk_at, seen - started


async def _first_events(b: Bench) -> dict[str, dict[str, Any]]:
    """`first_event_samples` rounds of one stream per path, the paths taking turns so that they share the
    machine's moments alike; ours also as the p50 added to the baseline's."""
    endpoints = _endpoints(b, "bench-ttft")
    after_token: dict[str, list[float]] = {name: [] for name in endpoints}
    after_request: dict[str, list[float]] = {name: [] for name in endpoints}
    for i in range(b.plan.first_event_samples):
        for name, endpoint in endpoints.items():
            overhead, to_first = await _first_event(b, endpoint, f"first{name}{i}")
            after_token[name].append(overhead)
            after_request[name].append(to_first)
    first_event: dict[str, dict[str, Any]] = {
        name: {
            "after_upstream_first_token": distribution(after_token[name]),
            "after_request": distribution(after_request[name]),
        }
        for name in endpoints
    }
    base_p50 = first_event["baseline"]["after_upstream_first_token"]["p50_ms"]
    for name in _STORES:
        p50 = first_event[name]["after_upstream_first_token"]["p50_ms"]
        first_event[name]["added_over_baseline_p50_ms"] = (
            round(p50 - base_p50, 3) if p50 is not None and base_p50 is not None else None
        )
    return first_event


async def stream_relay(b: Bench) -> dict[str, Any]:
    flood = await _relay_rates(b)
    first_event = await _first_events(b)
    return {
        "flood_deltas_per_stream": b.plan.flood_deltas,
        "first_token_delay_ms": b.plan.first_token_delay * 1000,
        "relay": flood,
        "first_event": first_event,
    }
