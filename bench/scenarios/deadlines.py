"""Scenario 15, what a write deadline costs a stored create (issue 25: at most 3 % of its CPU).

Every writing script carries its deadline (store/deadlines.py): the client reads its clock and sends one
argument more, Redis reads TIME and compares. Measured in this process on the stack's Redis, the store's
create (create.lua through the pipelined client, 16 at a time) with the deadline and without it, in
alternating rounds so that the machine's drift falls on both: this process's CPU and Redis's CPU per create.
The store's create is a part of a stored create's CPU, so the share measured here is an upper bound of the
share of the whole request's (scenario 1 measures that whole).
"""

from __future__ import annotations

import asyncio
import resource
import statistics
import time
from typing import Any

from redis.asyncio import Redis

from server import settings as settings_module
from server.protocol import status as st
from server.protocol.interaction import InteractionConfig
from server.protocol.records import StoredConfig
from server.protocol.steps import UserInputStep
from server.store.new_records import NewRecord
from server.store.store import Store

from .common import PROMPT, Bench

_ROUNDS = 10
_CREATES = 2000
_AT_ONCE = 16


def _record() -> NewRecord:
    return NewRecord(
        status=st.QUEUED,
        created="2026-12-01T00:00:00Z",
        background=True,
        logged=True,
        config=StoredConfig(config=InteractionConfig(model="echo"), input=PROMPT),
        input_steps=[UserInputStep(content=PROMPT)],
    )


async def _redis_cpu(redis: Redis) -> float:
    info: dict[str, Any] = await redis.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _round(store: Store, redis: Redis, tag: str) -> tuple[float, float, float]:
    """(this process's CPU s, Redis's CPU s, wall s) of `_CREATES` creates, `_AT_ONCE` at a time."""
    record = _record()
    queue = iter(range(_CREATES))

    async def creator() -> None:
        for i in queue:
            await store.interactions.create(
                "bench-deadlines", f"{tag}-{i}", record, previous_interaction_id=None, walk=False
            )

    own, theirs, wall = _own_cpu(), await _redis_cpu(redis), time.perf_counter()
    await asyncio.gather(*(creator() for _ in range(_AT_ONCE)))
    return _own_cpu() - own, await _redis_cpu(redis) - theirs, time.perf_counter() - wall


async def deadline_cost(b: Bench) -> dict[str, Any]:
    """Rounds of each arm in turn; the added CPU is the median over the rounds' pairs (this machine's noise
    is larger than the cost, and a median of pairs keeps it off the figure)."""
    store = await Store.open(settings_module.load({"REDIS_URL": b.stack.redis_url}))
    script = store.interactions.scripts.create
    deadlines = script.deadlines
    rounds: dict[str, list[tuple[float, float, float]]] = {"on": [], "off": []}
    try:
        await _round(store, b.redis, "warm")
        for n in range(_ROUNDS):
            for arm in ("on", "off") if n % 2 == 0 else ("off", "on"):
                script.deadlines = deadlines if arm == "on" else None
                rounds[arm].append(await _round(store, b.redis, f"{arm}{n}"))
    finally:
        script.deadlines = deadlines
        await store.close()
        async for key in b.redis.scan_iter(match="ix:{bench-deadlines}*", count=10_000):
            await b.redis.unlink(key)

    def per_create(arm: str, index: int) -> list[float]:
        return [each[index] / _CREATES * 1e6 for each in rounds[arm]]

    def median(values: list[float]) -> float:
        return round(statistics.median(values), 2)

    cpu = {
        arm: [c + r for c, r in zip(per_create(arm, 0), per_create(arm, 1), strict=True)] for arm in rounds
    }
    return {
        "creates_per_arm": _ROUNDS * _CREATES,
        "client_cpu_us": {arm: median(per_create(arm, 0)) for arm in rounds},
        "redis_cpu_us": {arm: median(per_create(arm, 1)) for arm in rounds},
        "wall_us": {arm: median(per_create(arm, 2)) for arm in rounds},
        "added_cpu_us": median([on - off for on, off in zip(cpu["on"], cpu["off"], strict=True)]),
        "cpu_ratio": round(statistics.median(cpu["on"]) / statistics.median(cpu["off"]), 3),
    }
