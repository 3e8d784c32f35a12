"""Scenario 22 (bench/scenarios/fairness.py) in the report: its table (its target is in targets.py)."""

from __future__ import annotations

from typing import Any

from .tables import Section, table


def fairness_section(results: dict[str, Any]) -> Section:
    run = results.get("fairness")
    if not (isinstance(run, dict) and run.get("trials")):
        return []
    pickup = run["b_pickup"]
    heading = (
        f"### 22. fair queueing: A queues {run['backlog']:,} background `echo` creates "
        f"(c{run['connections']}), then B queues one; {run['workers']} worker processes"
    )
    summary = [
        [
            "B's pickup: create → runner claims it",
            pickup["n"],
            pickup["p50_ms"],
            pickup["p99_ms"],
            pickup["max_ms"],
        ]
    ]
    header = ["trial", "A's creates", "A's seconds to queue them", "A's jobs in the queue at B's create"]
    header += ["B's pickup ms", "seconds until all ran"]
    rows = [
        [
            index,
            trial["a_created"],
            trial["a_queue_seconds"],
            trial["in_queue_at_b"],
            trial["b_pickup_ms"],
            trial["all_run_seconds"],
        ]
        for index, trial in enumerate(run["trials"], 1)
    ]
    return [
        heading,
        "",
        *table(["measure", "n", "p50 ms", "p99 ms", "max ms"], summary),
        *table(header, rows),
    ]


#: in the order of the report, after redis_tables.SECTIONS
SECTIONS = (fairness_section,)
