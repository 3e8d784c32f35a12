"""Scenarios 17 and 18 (bench/scenarios/dialects.py, generate.py) in the report: their tables (their targets
are in targets.py)."""

from __future__ import annotations

from typing import Any

from .tables import Section, table
from .targets import X


def dialects_section(results: dict[str, Any]) -> Section:
    run = results.get("dialects")
    if not (isinstance(run, dict) and run.get("create") and run.get("stream")):
        return []
    create, streams = run["create"], run["stream"]
    heading = (
        "### 17. the same create and stream through /v1/responses and /v1beta/interactions (creates: "
        f"wrk c{run['connections']}, {run['rounds']} rounds {X} {run['seconds_per_run']} s each, the paths "
        f"taking turns; streams: {run['flood_streams']} {X} {run['flood_deltas']:,} deltas, "
        f"{streams['rounds']} rounds)"
    )
    header = [
        "path",
        "creates/s",
        "p50 ms",
        "p99 ms",
        "server CPU ms/create",
        f"{X} Interactions",
        "stream events/s",
        f"{X} Interactions",
        "server µs/event",
        "errors",
    ]
    rows = []
    for name in ("interactions", "responses"):
        c, s = create[name], streams[name]
        own = name == "interactions"
        rows.append(
            [
                name,
                c["rps"],
                c["p50_ms"],
                c["p99_ms"],
                c["server_cpu_ms_per_req"],
                "1.00" if own else create["cpu_ratio"],
                s["events_per_s"],
                "1.00" if own else streams["events_ratio"],
                s["server_cpu_us_per_event"],
                c["errors"] + s["incomplete_streams"],
            ]
        )
    return [heading, "", *table(header, rows)]


def generate_section(results: dict[str, Any]) -> Section:
    run = results.get("generate")
    if not (isinstance(run, dict) and run.get("generate")):
        return []
    heading = (
        f"### 18. a streamGenerateContent through an upstream (wrk c{run['connections']}, {run['rounds']} "
        f"rounds {X} {run['seconds_per_run']} s each, the paths taking turns)"
    )
    header = ["path", "req/s", "p50 ms", "p99 ms", "server CPU ms/req", "errors"]
    rows = [
        [name, r["rps"], r["p50_ms"], r["p99_ms"], r["server_cpu_ms_per_req"], r["errors"]]
        for name in ("relay", "generate", "interaction")
        for r in (run[name],)
    ]
    return [heading, "", *table(header, rows)]


#: in the order of the report, after cost_tables.SECTIONS
SECTIONS = (dialects_section, generate_section)
