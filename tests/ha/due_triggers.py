"""Triggers firing through a failover test: made on a schedule of a few seconds, and what each time came to,
read from the API (executions) and from the Redis the Sentinels name primary (the interactions the
executions made, each naming its execution: store/keys.py Field.TRIGGER)."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import httpx
import redis

from server.store import keys

from ..support import tenant_of

TRIGGERS = "/v1beta/triggers"


def make(http: httpx.Client, count: int, schedule: str) -> list[str]:
    body = {"interaction": {"agent": "echo", "input": "tick"}, "schedule": schedule, "time_zone": "UTC"}
    made = [http.post(TRIGGERS, json=body) for _ in range(count)]
    assert all(each.status_code == 200 for each in made), [each.text for each in made]
    return [each.json()["id"] for each in made]


def executions(http: httpx.Client, trigger_id: str) -> list[dict[str, Any]]:
    """Its executions, oldest first (a read settles the one in progress whose interaction ended)."""
    found: list[dict[str, Any]] = []
    token = ""
    while True:
        page = http.get(f"{TRIGGERS}/{trigger_id}/executions", params={"page_token": token}).json()
        found += page.get("trigger_executions", [])
        token = page.get("next_page_token") or ""
        if not token:
            return found


def made_by_executions(primary: redis.Redis, api_key: str) -> Counter[str]:
    """How many stored interactions each execution ("<trigger id> <execution id>") made."""
    prefix = keys.tenant_prefix(tenant_of(api_key))
    made: Counter[str] = Counter()
    for name in primary.scan_iter(match=f"{prefix}v1_*", count=1000):
        if b":" in name[len(prefix) :]:
            continue  # an interaction's body, log or acknowledgement list
        marker = primary.hget(name, keys.Field.TRIGGER)
        if marker is not None:
            made[marker.decode()] += 1  # type: ignore[union-attr]
    return made


def gaps(scheduled_ms: list[int], period_ms: int) -> list[tuple[int, int]]:
    """The pairs of consecutive times further apart than the schedule's period (times lost)."""
    return [(a, b) for a, b in itertools.pairwise(scheduled_ms) if b - a != period_ms]
