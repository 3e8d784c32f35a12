"""Scenarios 3 and 4, background runs with the Python client, one at a time: how soon a runner takes a
background create, and how soon a cancel closes the run's upstream connection."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import Counter
from typing import Any, NamedTuple

from redis.asyncio import Redis
from redis.asyncio.client import PubSub

from ..client import Connection
from ..stats import distribution, ratio
from .common import CREATE, HEADERS, PROMPT, Bench, json_object, payload

# -- 3. background pickup ----------------------------------------------------------------------------------


async def _baseline_latency(b: Bench, samples: int) -> dict[str, Any]:
    """One request to the baseline (HTTP + one Redis SET) with the same Python client the scenarios use."""
    durations = []
    async with Connection(b.baseline.url, HEADERS) as conn:
        for _ in range(samples):
            started = time.monotonic()
            response = await conn.request("POST", CREATE, payload(model="echo", input=PROMPT))
            durations.append(time.monotonic() - started)
            if response.status != 200:
                raise RuntimeError(f"baseline answered {response.status}")
    return distribution(durations)


class Claims:
    """When each interaction was claimed by a runner, while in the `async with`. A claim is the first
    HINCRBY on the interaction's hash (server/store/scripts/claim.lua), seen as a keyspace notification:
    the record says when a runner took it, not the runner's logs or its upstream request. `keys`: the
    hashes listened to (a tenant's alone, where other tenants' claims would flood this process)."""

    def __init__(self, redis: Redis, keys: str = "ix:*") -> None:
        self.redis = redis
        self.keys = keys
        self.at: dict[str, float] = {}
        self._claimed = asyncio.Event()
        self._pubsub: PubSub | None = None
        self._listener: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Claims:
        # keyspace notifications cost Redis time on every write: on for this scenario only
        await self.redis.config_set("notify-keyspace-events", "Kh")
        self._pubsub = self.redis.pubsub()
        await self._pubsub.psubscribe(f"__keyspace@0__:{self.keys}")
        self._listener = asyncio.create_task(self._listen(self._pubsub))
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
        if self._pubsub is not None:
            await self._pubsub.aclose()  # type: ignore[no-untyped-call]
        await self.redis.config_set("notify-keyspace-events", "")

    async def _listen(self, pubsub: PubSub) -> None:
        async for message in pubsub.listen():
            if message.get("type") == "pmessage" and message.get("data") == b"hincrby":
                interaction_id = message["channel"].rsplit(b":", 1)[-1].decode()
                if interaction_id not in self.at:
                    self.at[interaction_id] = time.monotonic()
                    self._claimed.set()

    async def wait_for(self, interaction_id: str) -> float:
        """The moment `interaction_id` was claimed, once it is."""
        while interaction_id not in self.at:
            self._claimed.clear()
            await self._claimed.wait()
        return self.at[interaction_id]


class _Pickup(NamedTuple):
    """One background create, each moment in seconds after its request was sent."""

    response: float
    claim: float
    upstream_request: float


async def _pickup_once(b: Bench, conn: Connection, claims: Claims, tag: str) -> _Pickup | str:
    """One background create and its pickup, or what went wrong with it."""
    started = time.monotonic()
    response = await conn.request(
        "POST", CREATE, payload(model="bench-fast", input=f"{tag} go", background=True)
    )
    answered = time.monotonic()
    if response.status != 200:
        return f"status {response.status}"
    interaction_id = json_object(response.body)["id"]
    try:
        exchange = await b.next_exchange(tag, within=5)
        async with asyncio.timeout(5):
            claimed_at = await claims.wait_for(interaction_id)
            await exchange.ended.wait()
    except TimeoutError:
        return "not picked up within 5 s"
    b.upstream.forget(tag)
    return _Pickup(answered - started, claimed_at - started, exchange.received_at - started)


async def pickups(b: Bench, samples: int, prefix: str) -> dict[str, Any]:
    """`samples` background creates, one at a time: how soon a runner claimed each (see `Claims`) and how
    soon its upstream request reached the fake, after the create was sent; scenario 9 reuses it with its
    idle workers running."""
    create_latency: list[float] = []
    to_claim: list[float] = []
    to_upstream: list[float] = []
    errors: Counter[str] = Counter()
    async with Claims(b.redis) as claims:
        b.drain_arrivals()
        await asyncio.sleep(0.05)
        async with Connection(b.server.url, HEADERS) as conn:
            for i in range(samples):
                sample = await _pickup_once(b, conn, claims, f"{prefix}{i}")
                if isinstance(sample, str):
                    errors[sample] += 1
                    continue
                create_latency.append(sample.response)
                to_claim.append(sample.claim)
                to_upstream.append(sample.upstream_request)
                # a random pause: creates in step with the workers' heartbeats or fallback polls would
                # measure only one phase of them
                await asyncio.sleep(random.uniform(0.002, 0.012))
    return {
        "samples": samples,
        "errors": dict(errors),
        "create_to_claim": distribution(to_claim),
        "create_to_upstream_request": distribution(to_upstream),
        "create_response": distribution(create_latency),
    }


async def background_pickup(b: Bench) -> dict[str, Any]:
    """create(background) -> the runner takes it, read from the record (see `Claims`); the runner's upstream
    request arriving at the fake is reported beside it."""
    baseline = await _baseline_latency(b, b.plan.pickup_samples)
    b.baseline_python_p50_ms = baseline["p50_ms"]
    result = await pickups(b, b.plan.pickup_samples, "pickup")
    return {
        **result,
        "baseline_request": baseline,
        "claim_p50_vs_baseline": ratio(result["create_to_claim"]["p50_ms"], baseline["p50_ms"]),
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
                "POST", CREATE, payload(model="bench-slow", input=f"{tag} go", background=True)
            )
            if response.status != 200:
                errors[f"create status {response.status}"] += 1
                continue
            interaction_id = json_object(response.body)["id"]
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
            if response.status != 200 or json_object(response.body).get("status") != "cancelled":
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
