"""The seven scenarios of issue 6, each measured beside a baseline taken in the same run.

Every scenario takes the `Bench` (the running stack, the fake upstream, the plan) and returns a plain dict
that goes into bench/results/latest.json; bench/report.py turns those into the targets and the tables.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redis.asyncio import Redis

from .client import Connection
from .procs import Stack, WebServer, cpu_seconds, own_cpu_seconds, rss_bytes
from .stats import distribution, ratio
from .upstream import BenchUpstream, Exchange, words
from .wrk import WrkResult, run_wrk

API_KEY = "bench-key"
HEADERS = {"x-goog-api-key": API_KEY, "content-type": "application/json"}
CREATE = "/v1beta/interactions"
#: the create prompt of scenario 1: about 200 bytes, like a short chat turn
PROMPT = (
    "Please summarise the main points of these meeting notes in three short bullet points for the team, "
    "keeping the decisions and owners, and leave out the small talk at the start and the end of it."
)
DELTA = b"event: step.delta\n"
COMPLETED = b"event: interaction.completed\n"
UPSTREAM_DELTA = b'"delta":{"content":'
UPSTREAM_DONE = b"data: [DONE]"


@dataclass(frozen=True)
class Plan:
    quick: bool
    wrk_seconds: float
    wrk_repeats: int
    concurrency: tuple[int, ...]
    depths: tuple[int, ...]
    depth_seconds: float
    pickup_samples: int
    cancel_samples: int
    flood_streams: int
    flood_deltas: int
    first_event_samples: int
    first_token_delay: float
    many_streams: int
    many_ramp_seconds: float
    drip_words: int
    drip_interval: float
    memory_samples: int

    @classmethod
    def full(cls) -> Plan:
        return cls(
            quick=False,
            wrk_seconds=5,
            wrk_repeats=2,
            concurrency=(1, 16, 64),
            depths=(1, 10, 100, 1000),
            depth_seconds=3,
            pickup_samples=200,
            cancel_samples=100,
            flood_streams=4,
            flood_deltas=20_000,
            first_event_samples=100,
            first_token_delay=0.03,
            many_streams=1000,
            many_ramp_seconds=2.0,
            drip_words=25,
            drip_interval=0.25,
            memory_samples=20,
        )

    @classmethod
    def quick_plan(cls) -> Plan:
        return cls(
            quick=True,
            wrk_seconds=1,
            wrk_repeats=1,
            concurrency=(1, 16, 64),
            depths=(1, 10, 100),
            depth_seconds=1,
            pickup_samples=30,
            cancel_samples=15,
            flood_streams=2,
            flood_deltas=2_000,
            first_event_samples=15,
            first_token_delay=0.02,
            many_streams=100,
            many_ramp_seconds=0.5,
            drip_words=8,
            drip_interval=0.1,
            memory_samples=5,
        )


class Bench:
    """What the scenarios share: the plan, the stack, the fake upstream, a Redis client."""

    def __init__(
        self,
        plan: Plan,
        stack: Stack,
        server: WebServer,
        baseline: WebServer,
        one_server: WebServer,
        one_baseline: WebServer,
        upstream: BenchUpstream,
        redis: Redis,
        workdir: Path,
    ) -> None:
        self.plan = plan
        self.stack = stack
        self.server = server
        self.baseline = baseline
        self.one_server = one_server
        self.one_baseline = one_baseline
        self.upstream = upstream
        self.redis = redis
        self.workdir = workdir
        #: p50 latency of one baseline request with the Python client (set by scenario 3)
        self.baseline_python_p50_ms: float | None = None
        #: p50 latency of one baseline request with wrk at concurrency 1 (set by scenario 1)
        self.baseline_wrk_p50_ms: float | None = None

    async def wrk(
        self, server: WebServer, body: dict[str, Any], connections: int, seconds: float
    ) -> WrkResult:
        return await run_wrk(
            server.url + CREATE,
            json.dumps(body).encode(),
            api_key=API_KEY,
            connections=connections,
            seconds=seconds,
            server_pids=server.pids(),
            redis_pids=self.stack.redis_pids(),
            workdir=self.workdir,
        )

    async def next_exchange(self, tag: str, within: float = 10.0) -> Exchange:
        """The upstream request carrying `tag` (the bench's sequential scenarios wait for one at a time)."""
        async with asyncio.timeout(within):
            while True:
                exchange = await self.upstream.arrived.get()
                if exchange.tag == tag:
                    return exchange

    def drain_arrivals(self) -> None:
        while not self.upstream.arrived.empty():
            self.upstream.arrived.get_nowait()


def _body(**fields: Any) -> bytes:
    return json.dumps(fields).encode()


def _json(raw: bytes) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(raw)
    return value


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
            response = await conn.request("POST", CREATE, _body(**fields))
            if response.status != 200:
                raise RuntimeError(f"building the chain failed at turn {turn}: {response.body[:300]!r}")
            previous = _json(response.body)["id"]
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


# -- 3. background pickup ----------------------------------------------------------------------------------


async def _baseline_latency(b: Bench, samples: int) -> dict[str, Any]:
    """One request to the baseline (HTTP + one Redis SET) with the same Python client the scenarios use."""
    durations = []
    async with Connection(b.baseline.url, HEADERS) as conn:
        for _ in range(samples):
            started = time.monotonic()
            response = await conn.request("POST", CREATE, _body(model="echo", input=PROMPT))
            durations.append(time.monotonic() - started)
            if response.status != 200:
                raise RuntimeError(f"baseline answered {response.status}")
    return distribution(durations)


async def background_pickup(b: Bench) -> dict[str, Any]:
    """create(background) -> the runner takes it. "Takes" is read from the record: a runner's claim is the
    first HINCRBY on the interaction's hash (server/store/scripts/claim.lua), seen as a keyspace
    notification; the runner's upstream request arriving at the fake is reported beside it."""
    plan = b.plan
    baseline = await _baseline_latency(b, plan.pickup_samples)
    b.baseline_python_p50_ms = baseline["p50_ms"]
    claims: dict[str, float] = {}
    claimed = asyncio.Event()
    await b.redis.config_set("notify-keyspace-events", "Kh")
    pubsub = b.redis.pubsub()
    await pubsub.psubscribe("__keyspace@0__:ix:*")

    async def listen() -> None:
        async for message in pubsub.listen():
            if message.get("type") == "pmessage" and message.get("data") == b"hincrby":
                interaction_id = message["channel"].rsplit(b":", 1)[-1].decode()
                if interaction_id not in claims:
                    claims[interaction_id] = time.monotonic()
                    claimed.set()

    listener = asyncio.create_task(listen())
    to_claim, to_upstream, create_latency = [], [], []
    errors: Counter[str] = Counter()
    b.drain_arrivals()
    try:
        await asyncio.sleep(0.05)
        async with Connection(b.server.url, HEADERS) as conn:
            for i in range(plan.pickup_samples):
                tag = f"pickup{i}"
                started = time.monotonic()
                response = await conn.request(
                    "POST", CREATE, _body(model="bench-fast", input=f"{tag} go", background=True)
                )
                answered = time.monotonic()
                if response.status != 200:
                    errors[f"status {response.status}"] += 1
                    continue
                interaction_id = _json(response.body)["id"]
                try:
                    exchange = await b.next_exchange(tag, within=5)
                    async with asyncio.timeout(5):
                        while interaction_id not in claims:
                            claimed.clear()
                            await claimed.wait()
                        await exchange.ended.wait()
                except TimeoutError:
                    errors["not picked up within 5 s"] += 1
                    continue
                create_latency.append(answered - started)
                to_claim.append(claims[interaction_id] - started)
                to_upstream.append(exchange.received_at - started)
                b.upstream.forget(tag)
                # do not fall into step with the worker's 5 ms poll
                await asyncio.sleep(random.uniform(0.002, 0.012))
    finally:
        listener.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await listener
        await pubsub.aclose()  # type: ignore[no-untyped-call]
        await b.redis.config_set("notify-keyspace-events", "")
    claim = distribution(to_claim)
    return {
        "samples": plan.pickup_samples,
        "errors": dict(errors),
        "create_to_claim": claim,
        "create_to_upstream_request": distribution(to_upstream),
        "create_response": distribution(create_latency),
        "baseline_request": baseline,
        "claim_p50_vs_baseline": ratio(claim["p50_ms"], baseline["p50_ms"]),
    }


# -- 4. cancel ---------------------------------------------------------------------------------------------


async def cancel_latency(b: Bench) -> dict[str, Any]:
    """A background run streaming slowly from the fake in a worker process; cancel on the web process; the
    moment the fake sees its connection closed."""
    plan = b.plan
    to_close, cancel_response = [], []
    errors: Counter[str] = Counter()
    b.drain_arrivals()
    async with Connection(b.server.url, HEADERS) as conn:
        for i in range(plan.cancel_samples):
            tag = f"cancel{i}"
            response = await conn.request(
                "POST", CREATE, _body(model="bench-slow", input=f"{tag} go", background=True)
            )
            if response.status != 200:
                errors[f"create status {response.status}"] += 1
                continue
            interaction_id = _json(response.body)["id"]
            try:
                exchange = await b.next_exchange(tag, within=5)
                async with asyncio.timeout(5):
                    await exchange.first_chunk.wait()
            except TimeoutError:
                errors["run did not start within 5 s"] += 1
                continue
            # somewhere between two of the upstream's chunks (50 ms apart)
            await asyncio.sleep(random.uniform(0.005, 0.06))
            started = time.monotonic()
            response = await conn.request("POST", f"{CREATE}/{interaction_id}/cancel", b"")
            answered = time.monotonic()
            if response.status != 200 or _json(response.body).get("status") != "cancelled":
                errors[f"cancel answered {response.status}"] += 1
            try:
                async with asyncio.timeout(5):
                    await exchange.ended.wait()
            except TimeoutError:
                errors["upstream still open 5 s after the cancel"] += 1
                continue
            if exchange.disconnected_at is None:
                errors["upstream finished instead of being closed"] += 1
                continue
            to_close.append(exchange.disconnected_at - started)
            cancel_response.append(answered - started)
            b.upstream.forget(tag)
    closed = distribution(to_close)
    return {
        "samples": plan.cancel_samples,
        "errors": dict(errors),
        "cancel_to_upstream_closed": closed,
        "cancel_response": distribution(cancel_response),
        "baseline_request_p50_ms": b.baseline_python_p50_ms,
        "p99_vs_baseline": ratio(closed["p99_ms"], b.baseline_python_p50_ms),
    }


# -- 5. stream relay ---------------------------------------------------------------------------------------


class _Counted:
    """Counts a marker in a byte stream whose reads may split it."""

    def __init__(self, marker: bytes) -> None:
        self.marker = marker
        self.count = 0
        self._tail = b""

    def feed(self, data: bytes) -> int:
        buffer = self._tail + data
        found = buffer.count(self.marker)
        self.count += found
        self._tail = buffer[-(len(self.marker) - 1) :]
        return found


async def _stream(
    conn: Connection, path: str, body: bytes, marker: bytes, end: bytes, tail: list[bytes] | None = None
) -> AsyncIterator[tuple[float, int, bool]]:
    """Send one streaming request; yield (time, markers in this read, end seen) per read. Non-200 raises.
    `tail` keeps the last read, to say how a stream that ended early ended."""
    await conn.send("POST", path, body)
    status, headers = await conn.head()
    if status != 200:
        text = (await conn.body(headers))[:300]
        raise RuntimeError(f"status {status}: {text!r}")
    counted, ending = _Counted(marker), _Counted(end)
    async for data in conn.chunks(headers):
        now = time.monotonic()
        if tail is not None:
            tail[:] = [data]
        found = counted.feed(data)
        yield now, found, ending.feed(data) > 0


async def _flood(
    b: Bench, server: WebServer, path: str, body_of: Callable[[str], bytes], marker: bytes, end: bytes
) -> dict[str, Any]:
    plan = b.plan
    firsts, lasts, counts = [], [], []

    async def one(index: int) -> None:
        async with Connection(server.url, HEADERS) as conn:
            first, last, count = None, 0.0, 0
            async for now, found, _ended in _stream(conn, path, body_of(f"flood{index}"), marker, end):
                if found:
                    first = first or now
                    last = now
                    count += found
            firsts.append(first or last)
            lasts.append(last)
            counts.append(count)

    pids = server.serving_pids()
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


async def _first_event(
    b: Bench,
    server: WebServer,
    path: str,
    body_of: Callable[[str], bytes],
    marker: bytes,
    end: bytes,
    tag: str,
) -> tuple[float, float]:
    """(upstream's first chunk -> first delta at the client, request sent -> first delta)."""
    async with Connection(server.url, HEADERS) as conn:
        started = time.monotonic()
        seen: float | None = None
        async for now, found, _ended in _stream(conn, path, body_of(tag), marker, end):
            if found and seen is None:
                seen = now
    exchange = b.upstream.exchanges.pop(tag)
    if seen is None or exchange.first_chunk_at is None:
        raise RuntimeError(f"no delta in stream {tag}")
    return seen - exchange.first_chunk_at, seen - started


def _create_body(model: str, **extra: Any) -> Callable[[str], bytes]:
    return lambda tag: _body(model=model, input=f"{tag} go", stream=True, **extra)


def _relay_body(model: str) -> Callable[[str], bytes]:
    return lambda tag: _body(model=model, stream=True, messages=[{"role": "user", "content": f"{tag} go"}])


async def stream_relay(b: Bench) -> dict[str, Any]:
    plan = b.plan
    server, baseline = b.one_server, b.one_baseline
    flood = {
        "store_true": await _flood(b, server, CREATE, _create_body("bench-flood"), DELTA, COMPLETED),
        "store_false": await _flood(
            b, server, CREATE, _create_body("bench-flood", store=False), DELTA, COMPLETED
        ),
        "baseline": await _flood(
            b, baseline, "/relay", _relay_body("bench-flood"), UPSTREAM_DELTA, UPSTREAM_DONE
        ),
    }
    for name in ("store_true", "store_false"):
        flood[name]["ratio"] = ratio(flood[name]["events_per_s"], flood["baseline"]["events_per_s"])
    overhead: dict[str, list[float]] = {"store_true": [], "store_false": [], "baseline": []}
    to_first: dict[str, list[float]] = {"store_true": [], "store_false": [], "baseline": []}
    for i in range(plan.first_event_samples):
        for name, (target, path, body_of, marker, end) in {
            "store_true": (server, CREATE, _create_body("bench-ttft"), DELTA, COMPLETED),
            "store_false": (server, CREATE, _create_body("bench-ttft", store=False), DELTA, COMPLETED),
            "baseline": (baseline, "/relay", _relay_body("bench-ttft"), UPSTREAM_DELTA, UPSTREAM_DONE),
        }.items():
            after_token, after_request = await _first_event(
                b, target, path, body_of, marker, end, f"first{name}{i}"
            )
            overhead[name].append(after_token)
            to_first[name].append(after_request)
    first_event: dict[str, dict[str, Any]] = {
        name: {
            "after_upstream_first_token": distribution(overhead[name]),
            "after_request": distribution(to_first[name]),
        }
        for name in overhead
    }
    base_p50 = first_event["baseline"]["after_upstream_first_token"]["p50_ms"]
    for name in ("store_true", "store_false"):
        p50 = first_event[name]["after_upstream_first_token"]["p50_ms"]
        first_event[name]["added_over_baseline_p50_ms"] = (
            round(p50 - base_p50, 3) if p50 is not None and base_p50 is not None else None
        )
    return {
        "flood_deltas_per_stream": plan.flood_deltas,
        "first_token_delay_ms": plan.first_token_delay * 1000,
        "relay": flood,
        "first_event": first_event,
    }


# -- 6. many streams ---------------------------------------------------------------------------------------


async def _many(
    b: Bench, server: WebServer, path: str, body_of: Callable[[str], bytes], marker: bytes, end: bytes
) -> dict[str, Any]:
    plan = b.plan
    errors: Counter[str] = Counter()
    active = peak = 0
    rss_peak: dict[int, int] = {}
    pids = server.serving_pids()
    rss_idle = {pid: rss_bytes(pid) for pid in pids}
    done = asyncio.Event()

    async def sample_rss() -> None:
        while not done.is_set():
            for pid in pids:
                rss_peak[pid] = max(rss_peak.get(pid, 0), rss_bytes(pid))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.1):
                    await done.wait()

    async def one(index: int) -> None:
        nonlocal active, peak
        await asyncio.sleep(index * plan.many_ramp_seconds / plan.many_streams)
        conn = Connection(server.url, HEADERS)
        opened = False
        count, ended = 0, False
        tail: list[bytes] = []
        try:
            await conn.open()
            async for _now, found, saw_end in _stream(conn, path, body_of(f"many{index}"), marker, end, tail):
                if not opened:
                    opened = True
                    active += 1
                    peak = max(peak, active)
                count += found
                ended = ended or saw_end
            if count != plan.drip_words or not ended:
                last = tail[0][-160:].decode(errors="replace") if tail else "nothing"
                errors[f"incomplete stream ({count}/{plan.drip_words} deltas, end {ended}): {last}"] += 1
        except Exception as exc:
            errors[f"{type(exc).__name__}: {str(exc)[:80]}"] += 1
        finally:
            if opened:
                active -= 1
            await conn.close()

    sampler = asyncio.create_task(sample_rss())
    started = time.monotonic()
    cpu_before = cpu_seconds(pids)
    try:
        await asyncio.gather(*(one(i) for i in range(plan.many_streams)))
    finally:
        done.set()
        await sampler
    wall = time.monotonic() - started
    busiest = max(pids, key=lambda pid: rss_peak.get(pid, 0))
    return {
        "streams": plan.many_streams,
        "errors": sum(errors.values()),
        "error_kinds": dict(errors),
        "peak_concurrent": peak,
        "seconds": round(wall, 2),
        "rss_idle_mb": round(rss_idle.get(busiest, 0) / 2**20, 1),
        "rss_peak_mb": round(rss_peak.get(busiest, 0) / 2**20, 1),
        "server_cores": round((cpu_seconds(pids) - cpu_before) / wall, 3),
    }


async def many_streams(b: Bench) -> dict[str, Any]:
    b.upstream.exchanges.clear()
    ours = await _many(b, b.one_server, CREATE, _create_body("bench-drip"), DELTA, COMPLETED)
    b.upstream.exchanges.clear()
    baseline = await _many(
        b, b.one_baseline, "/relay", _relay_body("bench-drip"), UPSTREAM_DELTA, UPSTREAM_DONE
    )
    b.upstream.exchanges.clear()
    b.drain_arrivals()
    return {
        "words_per_stream": b.plan.drip_words,
        "word_interval_ms": b.plan.drip_interval * 1000,
        "ours": ours,
        "baseline": baseline,
        "rss_peak_ratio": ratio(ours["rss_peak_mb"], baseline["rss_peak_mb"]),
    }


# -- 7. Redis memory ---------------------------------------------------------------------------------------


async def _memory_of(redis: Redis, interaction_id: str) -> tuple[int, list[str]]:
    """MEMORY USAGE summed over every key that names the interaction."""
    total, names = 0, []
    async for key in redis.scan_iter(match=f"ix:*{interaction_id}*", count=10_000):
        total += int(await redis.memory_usage(key, samples=0) or 0)
        name = key.decode()
        names.append(name[name.index(interaction_id) + len(interaction_id) :] or "(hash)")
    return total, sorted(names)


async def redis_memory(b: Bench) -> dict[str, Any]:
    """One-turn interactions holding about 1 KB of text: a 512-byte input that `echo` answers with itself."""
    plan = b.plan
    text = words(200)[:512].rsplit(" ", 1)[0]
    variants = {"stored": {}, "stored_streamed": {"stream": True}}
    results: dict[str, Any] = {}
    async with Connection(b.server.url, HEADERS) as conn:
        for name, extra in variants.items():
            usages: list[int] = []
            text_bytes, key_names = 0, list[str]()
            for i in range(plan.memory_samples):
                prompt = f"m{i:04d} {text}"
                response = await conn.request("POST", CREATE, _body(model="echo", input=prompt, **extra))
                if response.status != 200:
                    raise RuntimeError(f"create answered {response.status}: {response.body[:300]!r}")
                if extra.get("stream"):
                    interaction_id = response.body.split(b'"id":"', 1)[1].split(b'"', 1)[0].decode()
                else:
                    interaction_id = _json(response.body)["id"]
                usage, key_names = await _memory_of(b.redis, interaction_id)
                usages.append(usage)
                text_bytes = 2 * len(prompt.encode())  # the input, and the same words as the output
            mean = sum(usages) / len(usages)
            results[name] = {
                "samples": len(usages),
                "keys": key_names,
                "text_bytes": text_bytes,
                "memory_bytes": round(mean),
                "beyond_text_bytes": round(mean - text_bytes),
            }
    await b.redis.set("bench:memory:text", "x" * results["stored"]["text_bytes"])
    floor = int(await b.redis.memory_usage("bench:memory:text", samples=0) or 0)
    await b.redis.delete("bench:memory:text")
    results["baseline_string_bytes"] = floor
    for name in variants:
        results[name]["ratio"] = ratio(results[name]["memory_bytes"], floor)
    return results


SCENARIOS: dict[str, Callable[[Bench], Any]] = {
    "create": create_throughput,
    "chain": chain_depth,
    "pickup": background_pickup,
    "cancel": cancel_latency,
    "stream": stream_relay,
    "many_streams": many_streams,
    "memory": redis_memory,
}
