"""Scenario 23 (bench/scenarios/limits.py) in the report: what a tenant's limits cost a stored create, its
table and its targets (after redis_tables.py's in the Targets table, as targets.py is long enough)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from .tables import Row, Section, fmt, table
from .targets import Target, X, get, target

#: issue 30: the accounting and limits cost a create at most 5 % more CPU and one more Redis round trip
CPU_RATIO = 1.05
ADDED_ROUND_TRIPS = 1.0
KEYS = ("unlimited", "limited")


def targets(results: dict[str, Any]) -> list[Target]:
    run = results.get("limits") or {}
    cpu = run.get("cpu") or {}
    rounds = ", ".join(f"{value}{X}" for value in cpu.get("cpu_ratio_by_round") or [])
    cpu_detail = (
        f"{get(cpu, 'limited', 'server_cpu_ms_per_req')} vs {get(cpu, 'unlimited', 'server_cpu_ms_per_req')} "
        f"ms pooled ({cpu.get('cpu_ratio')}{X}); rounds {rounds}"
    )
    c1, c16 = get(run, "redis", "c1") or {}, get(run, "added", "c16") or {}
    added = get(run, "added", "c1") or {}
    reads = added.get("reads")
    trips_detail = (
        f"{get(c1, 'limited', 'reads')} vs {get(c1, 'unlimited', 'reads')} round trips a create; "
        f"+{added.get('commands')} commands, +{added.get('scripts')} scripts; c16: +{c16.get('reads')} reads"
    )
    return [
        target(
            "23",
            "limits: server CPU per stored create at c16, limited vs unlimited tenant (median of rounds)",
            cpu.get("cpu_ratio_median_round"),
            "<=",
            CPU_RATIO,
            X,
            cpu_detail,
        ),
        # to one decimal: a round trip more is a whole one, and the difference of two runs' reads moves the
        # second decimal (+1.01 in a run whose slow c1 run had ~500 creates for the workers' waits that
        # its idle twin did not match)
        target(
            "23",
            "limits: Redis round trips per stored create at c1, limited less unlimited tenant",
            None if reads is None else round(reads, 1),
            "<=",
            ADDED_ROUND_TRIPS,
            "",
            trips_detail,
        ),
    ]


def _cpu_rows(cpu: dict[str, Any]) -> list[Row]:
    return [
        [
            name,
            cpu[name]["rps"],
            cpu[name]["p50_ms"],
            cpu[name]["p99_ms"],
            cpu[name]["server_cpu_ms_per_req"],
            "1.00" if name == "unlimited" else cpu["cpu_ratio"],
            cpu[name]["redis_cpu_ms_per_req"],
            cpu[name]["errors"],
        ]
        for name in KEYS
    ]


def _redis_rows(redis: dict[str, dict[str, Any]]) -> list[Row]:
    fields = (
        "creates",
        "rps",
        "server_cpu_ms",
        "commands",
        "scripts",
        "reads",
        "writes",
        "net_in_bytes",
        "errors",
    )
    return [
        [level, name, *(keyed[name][f] for f in fields)] for level, keyed in redis.items() for name in KEYS
    ]


def _commands_added(redis: dict[str, dict[str, Any]]) -> str:
    """The commands the limited key's create runs more than the other's, at c1 (per create)."""
    c1 = redis.get("c1") or {}
    more = Counter(get(c1, "limited", "by_command") or {})
    more.subtract(get(c1, "unlimited", "by_command") or {})
    shown = [(name, n) for name, n in more.most_common() if abs(n) >= 0.05]
    return ", ".join(f"{name} {'+' if n > 0 else ''}{fmt(n)}" for name, n in shown) or "none"


def limits_section(results: dict[str, Any]) -> Section:
    run = results.get("limits")
    if not (isinstance(run, dict) and run.get("cpu") and run.get("redis")):
        return []
    cpu, redis = run["cpu"], run["redis"]
    heading = (
        f"### 23. what a tenant's limits cost a stored echo create (one server of its own, two keys: CPU at "
        f"wrk c{run['connections']}, {run['rounds']} rounds {X} {run['seconds_per_run']} s each, the keys "
        "taking turns; Redis per create from INFO, each run less an idle window as long)"
    )
    cpu_header = [
        "tenant",
        "creates/s",
        "p50 ms",
        "p99 ms",
        "server CPU ms/create",
        f"{X} unlimited",
        "Redis CPU ms/create",
        "errors",
    ]
    redis_header = [
        "conc.",
        "tenant",
        "creates",
        "creates/s",
        "server CPU ms/create",
        "Redis cmds / create",
        "scripts / create",
        "reads / create",
        "writes / create",
        "bytes in / create",
        "errors",
    ]
    rounds = ", ".join(f"{fmt(value)}{X}" for value in cpu["cpu_ratio_by_round"])
    notes = (
        f"Server CPU, limited ÷ unlimited, by round: {rounds}; median {fmt(cpu['cpu_ratio_median_round'])}"
        f"{X}. What the limited tenant's create runs more (c1, per create): {_commands_added(redis)}. "
        f"Requests refused by a limit: {fmt(run['refused'])}."
    )
    return [
        heading,
        "",
        *table(cpu_header, _cpu_rows(cpu)),
        *table(redis_header, _redis_rows(redis)),
        notes,
        "",
    ]


#: in the order of the report, after redis_tables.SECTIONS
SECTIONS = (limits_section,)
