"""Scenario 22 (issue 30), fair queueing: tenant A queues a backlog of background jobs, then tenant B queues
one; how soon a runner claims B's (its pickup), with four worker processes.

Each trial: A's `fair_backlog` background `echo` creates (2,000) go out over `CONNECTIONS` connections as
fast as the server answers them. An `echo` run costs CPU only, so the backlog is what the machine cannot run
as fast as it is queued; it is measured, not assumed: A's jobs still waiting in arq's queue (due, not taken)
when B's create is sent. B's create goes out once the last of A's was answered; its pickup is its claim
(scenario 3's: the first HINCRBY on its hash, a keyspace notification, listened to for B's keys only) less
the moment its create was sent. Then the trial waits for the queue to drain (no job due now left in it), so
that each trial starts from an empty queue, and notes how long A's backlog took. The stack's own workers
count among the four; the scenario starts the rest and stops them at the end.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import Any

from tests.waiting import until_async

from ..client import Connection
from ..procs import Child
from ..stats import distribution
from .background import Claims
from .common import CREATE, Bench, creates, json_object, payload

#: A's creates in flight at once
CONNECTIONS = 32
#: how long A's backlog may take to run through before a trial is given up
DRAIN_SECONDS = 120.0
A_KEY, B_KEY = "bench-fair-a", "bench-fair-b"
#: the stack's queue (config/server.toml, `[worker] queue_name`)
QUEUE = "ix:queue"


def _headers(key: str) -> dict[str, str]:
    return {"x-goog-api-key": key, "content-type": "application/json"}


def _tenant(key: str) -> str:
    """The tenant of an API key in the server's open mode (server/api/auth.py)."""
    return hashlib.sha256(key.encode()).hexdigest()[:32]


async def _backlog(b: Bench, count: int) -> int:
    """A's `count` background creates over CONNECTIONS connections; returns how many were answered 200."""
    body = payload(model="echo", input="a backlog", background=True)
    return await creates(b.server.url, A_KEY, (body for _ in range(count)), CONNECTIONS)


async def _waiting(b: Bench) -> int:
    """Jobs due now in arq's queue: waiting or running (a job leaves the queue once done)."""
    return int(await b.redis.zcount(QUEUE, "-inf", time.time() * 1000))


async def _drained(b: Bench) -> None:
    """Until no job due now is left in the queue."""

    async def empty() -> bool:
        return await _waiting(b) == 0

    await until_async(empty, within=DRAIN_SECONDS, interval=0.05)


async def _trial(b: Bench, claims: Claims) -> dict[str, Any]:
    """One backlog of A's and one create of B's: B's pickup (s) and what was around it."""
    body = payload(model="echo", input="b's one", background=True)
    # opened first (a connection idle through a trial would be closed by the server)
    async with Connection(b.server.url, _headers(B_KEY)) as conn:
        began = time.monotonic()
        created = await _backlog(b, b.plan.fair_backlog)
        queued_seconds = time.monotonic() - began
        behind = await _waiting(b)
        sent = time.monotonic()
        response = await conn.request("POST", CREATE, body)
    if response.status != 200:
        raise RuntimeError(f"B's create answered {response.status}")
    interaction_id = json_object(response.body)["id"]
    async with asyncio.timeout(DRAIN_SECONDS):
        claimed = await claims.wait_for(interaction_id)
    await _drained(b)
    return {
        "a_created": created,
        "a_queue_seconds": round(queued_seconds, 2),
        "in_queue_at_b": behind,
        "b_pickup_s": claimed - sent,
        "all_run_seconds": round(time.monotonic() - began, 2),
    }


async def fair_pickup(b: Bench) -> dict[str, Any]:
    plan = b.plan
    own = [child for child in b.stack.children if child.name.startswith("worker-")]
    extra: list[Child] = []
    trials: list[dict[str, Any]] = []
    try:
        missing = plan.fair_workers - len(own)
        if missing > 0:
            extra = await b.stack.start_workers([f"fair-{i}" for i in range(missing)], within=120.0)
        await _drained(b)
        async with Claims(b.redis, f"ix:{{{_tenant(B_KEY)}}}:*") as claims:
            for _ in range(plan.fair_trials):
                trials.append(await _trial(b, claims))
    finally:
        await asyncio.to_thread(b.stack.stop_children, extra)
    pickups = [trial.pop("b_pickup_s") for trial in trials]
    for trial, seconds in zip(trials, pickups, strict=True):
        trial["b_pickup_ms"] = round(seconds * 1000, 2)
    return {
        "workers": len(own) + len(extra),
        "backlog": plan.fair_backlog,
        "connections": CONNECTIONS,
        "b_pickup": distribution(pickups),
        "trials": trials,
    }
