"""Scenario 21 (issue 29), triggers on time: how late each of 1,000 triggers due in the same minute
starts its execution, and what 10,000 registered triggers cost while nothing is due.

On the bench's stack (its web process and worker(s), the defaults of config/server.toml):

- **idle cost**: the Redis commands and the worker CPU over a window (scenario 9's measure,
  bench/scenarios/idle.py) with no triggers, then again with 10,000 registered (100 tenants of 100, the
  most `[triggers] max_triggers` lets one have), all due next year. The target: no more than with none (a
  trigger waits as one job on the deferred set, which no worker reads until the first is due).
- **lateness**: 1,000 triggers (10 tenants of 100) on six-field daily schedules, `S M H * * *`, spread
  over the seconds of one minute (a daily schedule passes the shipped `min_interval_seconds`): each
  execution's `start_time` less its `scheduled_time`, both stamped by the server. The target: p99 ≤ 1 s.
  A trigger with no execution 15 s after the minute's end is missing, an error of the report.

It runs last: its triggers stay (the stack is stopped after it).
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

from ..client import Connection
from ..stats import distribution
from .common import Bench, json_object, payload
from .idle import window

PER_TENANT = 100
CHECK_WINDOW_SECONDS = 30.0
#: what each idle window keeps
_KEPT = (
    "commandstats_per_s",
    "commandstats_by_command_per_s",
    "cpu_percent_per_worker",
    "commands_per_s_per_worker",
)
WAIT_AFTER_SECONDS = 15.0
TRIGGERS = "/v1beta/triggers"


async def _create(url: str, tenant: str, schedules: list[str]) -> list[str]:
    """The triggers of one tenant, one create each, in order; their ids."""
    headers = {"x-goog-api-key": tenant, "content-type": "application/json"}
    made = []
    async with Connection(url, headers) as conn:
        for schedule in schedules:
            body = payload(interaction={"agent": "echo", "input": "tick"}, schedule=schedule, time_zone="UTC")
            response = await conn.request("POST", TRIGGERS, body)
            if response.status != 200:
                raise RuntimeError(f"trigger create answered {response.status}: {response.body[:300]!r}")
            made.append(str(json_object(response.body)["id"]))
    return made


async def _register(url: str, prefix: str, schedules: list[str]) -> dict[str, list[str]]:
    """`schedules` as triggers, PER_TENANT a tenant, 10 tenants at once."""
    tenants = {
        f"{prefix}-{n}": schedules[n * PER_TENANT : (n + 1) * PER_TENANT]
        for n in range(len(schedules) // PER_TENANT)
    }
    made: dict[str, list[str]] = {}
    names = list(tenants)
    for start in range(0, len(names), 10):
        batch = names[start : start + 10]
        ids = await asyncio.gather(*(_create(url, name, tenants[name]) for name in batch))
        made.update(zip(batch, ids, strict=True))
    return made


async def _executions(url: str, tenant: str, ids: list[str]) -> list[dict[str, Any]]:
    headers = {"x-goog-api-key": tenant}
    found: list[dict[str, Any]] = []
    async with Connection(url, headers) as conn:
        for trigger_id in ids:
            response = await conn.request("GET", f"{TRIGGERS}/{trigger_id}/executions")
            found += json_object(response.body).get("trigger_executions", [])
    return found


def _ms(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


async def _lateness(b: Bench, count: int, spread: int) -> dict[str, Any]:
    # the minute they are due in: the first whole one at least 30 s away (quick: a few seconds from 20 s on)
    due = int(time.time()) + 20
    if spread == 60:
        due = (int(time.time()) // 60 + 1) * 60
        due += 60 if due - time.time() < 30 else 0
    at = datetime.fromtimestamp(due, UTC)
    schedules = [f"{(at.second + n % spread) % 60} {at.minute} {at.hour} * * *" for n in range(count)]
    made = await _register(b.server.url, "bench-triggers-due", schedules)
    await asyncio.sleep(max(0.0, due + spread + WAIT_AFTER_SECONDS - time.time()))
    found = []
    for tenant, ids in made.items():
        found += await _executions(b.server.url, tenant, ids)
    late = [_ms(e["start_time"]) - _ms(e["scheduled_time"]) for e in found if e.get("start_time")]
    result: dict[str, Any] = {
        "triggers": count,
        "spread_seconds": spread,
        "executions": len(found),
        "skipped": sum(1 for e in found if e.get("status") == "skipped"),
        "lateness": distribution(late),
    }
    if len(found) != count:
        result["error"] = f"{len(found)} executions of {count} triggers due (one each expected)"
    return result


async def trigger_fires(b: Bench) -> dict[str, Any]:
    quick = b.plan.quick
    workers = [child for child in b.stack.children if child.name.startswith("worker-")]
    # a worker's timer checks the deferred set every 30 s (and otherwise waits for the first due time): a
    # window of that length holds one check of each worker, registered triggers or not
    seconds = b.plan.idle_window_seconds if quick else CHECK_WINDOW_SECONDS
    none = await window(b, workers, seconds)
    registered = 1_000 if quick else 10_000
    began = time.monotonic()
    await _register(b.server.url, "bench-triggers-idle", ["0 0 1 1 *"] * registered)
    register_seconds = time.monotonic() - began
    await asyncio.sleep(b.plan.idle_settle_seconds)
    idle = await window(b, workers, seconds)
    return {
        "idle": {
            "registered": registered,
            "register_seconds": round(register_seconds, 1),
            "none": {k: none[k] for k in _KEPT},
            "registered_idle": {k: idle[k] for k in _KEPT},
        },
        "due": await _lateness(b, 100 if quick else 1_000, 10 if quick else 60),
    }
