"""Scenarios 19 and 20 (bench/scenarios/follow.py, trips.py) in the report: what following a remote run
costs a worker and Redis per minute of run, and what a create costs Redis in commands and round trips; their
tables and their targets (after targets.py's, in the Targets table)."""

from __future__ import annotations

from typing import Any

from .stats import ratio
from .tables import Row, Section, fmt, table
from .targets import Target, X, get, target

#: issue 28 gives no target for following a remote run, so these are ours. A worker core should follow
#: at least 100 runs at once at a brisk agent's pace: 1 % of a core a run. Redis: two commands an event at
#: five events a second, 600 a minute: the event's own XADD, and one more for all else the writer does for
#: a run (its fence and status check, its sequence, its log's TTL, its lease), so that 1,000 runs followed
#: at once stay near 10,000 commands a second
FOLLOW_CPU_PERCENT = 1.0
FOLLOW_COMMANDS_PER_MINUTE = 600
#: issue 31: one Redis round trip on the request path of a stored foreground create
ROUND_TRIPS = 1.0
TRIP_PATHS = {"upstream": "stored create through an upstream", "echo": "stored echo create"}


def _follow_targets(results: dict[str, Any]) -> list[Target]:
    run = results.get("remote_follow") or {}
    minute = run.get("per_run_minute") or {}
    pace = f"{run.get('runs')} runs at once, {minute.get('events_per_run_minute')} events a run-minute"
    cpu = (
        f"{minute.get('worker_cpu_s_per_run_minute')} s of worker CPU per run-minute, "
        f"{minute.get('worker_cpu_us_per_event')} µs per event; {pace}"
    )
    commands = (
        f"{minute.get('redis_commands_per_event')} per event; Redis CPU "
        f"{minute.get('redis_cpu_s_per_run_minute')} s per run-minute; {pace}"
    )
    return [
        target(
            "19",
            "following a remote background run: worker CPU per followed run",
            minute.get("worker_cpu_percent_per_run"),
            "<=",
            FOLLOW_CPU_PERCENT,
            " % of a core",
            cpu,
        ),
        target(
            "19",
            "following a remote background run: Redis commands per minute of run (scripts' included)",
            minute.get("redis_commands_per_run_minute"),
            "<=",
            FOLLOW_COMMANDS_PER_MINUTE,
            "",
            commands,
        ),
    ]


def _trips_targets(results: dict[str, Any]) -> list[Target]:
    rows = get(results, "round_trips", "by_concurrency") or {}
    out = []
    for path, label in TRIP_PATHS.items():
        c1, c16 = get(rows, "c1", path) or {}, get(rows, "c16", path) or {}
        base = get(rows, "c1", "baseline") or {}
        detail = (
            f"{c1.get('commands')} commands in {c1.get('scripts')} scripts a create; c16: "
            f"{c16.get('reads')} reads a create (calls of creates written together); baseline (one SET) "
            f"{base.get('reads')} round trips"
        )
        name = f"{label}: Redis round trips per create (reads at c1)"
        # to two decimals: the third moves with a few reads of the workers' waits that the idle twin did
        # not match (a thousand creates and more a window)
        reads = c1.get("reads")
        measured = None if reads is None else round(reads, 2)
        out.append(target("20", name, measured, "<=", ROUND_TRIPS, "", detail))
    return out


def targets(results: dict[str, Any]) -> list[Target]:
    return [*_follow_targets(results), *_trips_targets(results)]


# -- 19. following remote runs -----------------------------------------------------------------------------


def follow_section(results: dict[str, Any]) -> Section:
    run = results.get("remote_follow")
    if not (isinstance(run, dict) and run.get("per_run_minute")):
        return []
    m, life, idle = run["per_run_minute"], run["life"], run["idle"]
    heading = (
        f"### 19. following remote background runs ({run['runs']} agent runs at once on a second server of "
        f"ours, a word every {run['word_delay_ms']} ms; a {fmt(run['window_seconds'])} s window, less its "
        f"idle twin; {run['workers']} worker process(es))"
    )
    header = [
        "events / run-min",
        "worker CPU ms / run-min",
        "% of a core / run",
        "worker µs / event",
        "Redis cmds / run-min",
        "cmds / event",
        "Redis reads / run-min",
        "Redis CPU ms / run-min",
        "web CPU ms / run-min",
        "errors",
    ]
    row: Row = [
        m["events_per_run_minute"],
        m["worker_cpu_s_per_run_minute"] * 1000,
        m["worker_cpu_percent_per_run"],
        m["worker_cpu_us_per_event"],
        m["redis_commands_per_run_minute"],
        m["redis_commands_per_event"],
        m["redis_reads_per_run_minute"],
        m["redis_cpu_s_per_run_minute"] * 1000,
        m["web_cpu_s_per_run_minute"] * 1000,
        sum(run["errors"].values()),
    ]
    commands = ", ".join(f"{name} {fmt(n, 1)}" for name, n in m["by_command_per_run_minute"].items())
    lived = (
        f"worker CPU {fmt(life['worker_cpu_ms_per_run'])} ms, web process {fmt(life['web_cpu_ms_per_run'])} "
        f"ms, Redis {fmt(life['redis_cpu_ms_per_run'])} ms and {fmt(life['redis_commands_per_run'])} commands"
    )
    notes = (
        f"What a minute of a followed run sends Redis (scripts' commands included): {commands}. A run's "
        f"whole life (its create to its end, {fmt(life['seconds'])} s for all): {lived}. The idle twin "
        f"({fmt(idle['seconds'])} s, taken off): worker CPU {idle['worker_cpu_s']} s, "
        f"{idle['redis_commands']} Redis commands. Runs still followed at the window's end: "
        f"{run['running_at_window_end']} of {run['runs']}; errors: {run['errors'] or 'none'}."
    )
    return [heading, "", *table(header, [row]), notes, ""]


# -- 20. commands and round trips per create ---------------------------------------------------------------


def trips_section(results: dict[str, Any]) -> Section:
    run = results.get("round_trips")
    if not (isinstance(run, dict) and run.get("by_concurrency")):
        return []
    heading = (
        "### 20. Redis commands and round trips per create (wrk, each run less an idle window as long; "
        "from Redis's INFO stats and commandstats)"
    )
    header = [
        "conc.",
        "path",
        "creates",
        "creates/s",
        "Redis cmds / create",
        f"{X} baseline",
        "scripts / create",
        "reads / create",
        "writes / create",
        "bytes in / create",
        "errors",
    ]
    rows: list[Row] = []
    for level, paths in run["by_concurrency"].items():
        base = paths["baseline"]["commands"]
        for path, d in paths.items():
            rows.append(
                [
                    level,
                    "baseline (one SET)" if path == "baseline" else path,
                    d["creates"],
                    d["rps"],
                    d["commands"],
                    ratio(d["commands"], base),
                    d["scripts"],
                    d["reads"],
                    d["writes"],
                    d["net_in_bytes"],
                    d["errors"],
                ]
            )
    upstream = get(run, "by_concurrency", "c1", "upstream", "by_command") or {}
    commands = ", ".join(f"{name} {fmt(n)}" for name, n in upstream.items())
    notes = (
        "At c1 a read is a round trip (one create in flight, each of its Redis calls awaited before the "
        "next); at c16 the store's pipelined client writes the calls of several creates at once, so a read "
        f"serves more than one. What a create through the upstream runs (c1, per create): {commands}."
    )
    return [heading, "", *table(header, rows), notes, ""]


#: in the order of the report, after dialect_tables.SECTIONS
SECTIONS = (follow_section, trips_section)
