"""The tables of scenarios 9 (issue 12: what idle workers cost), 10 (issue 13: what metrics and the access
log cost), 11 (issue 14: webhook delivery), 12 (issue 16: the list in a small and a large tenant) and 13
(what `[store] replica_acks = 1` costs), in the form of tables.py: each section takes a run's results and
returns its lines, or none when the scenario did not run or broke. Scenario 8's is in upstream_tables.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .tables import Row, Section, fmt, table
from .targets import X

# -- 9. idle workers ---------------------------------------------------------------------------------------


def _idle_row(count: str, d: dict[str, Any]) -> Row:
    pickup = d["pickup"]["create_to_claim"]
    return [
        count,
        d["commands_per_s_per_worker"],
        d["client_commands_per_s_per_worker"],
        d["script_commands_per_s_per_worker"],
        d["max_worker_commands_per_s"],
        d["cpu_percent_per_worker"],
        d["max_worker_cpu_percent"],
        d["commandstats_per_s"],
        d["monitor_per_s"],
        pickup["p50_ms"],
        pickup["p99_ms"],
        sum(d["pickup"]["errors"].values()),
        d["pickup"].get("redis_commands_per_pickup"),
        d["pickup"].get("workers_cpu_ms_per_pickup"),
    ]


def idle_workers_section(results: dict[str, Any]) -> Section:
    idle = results.get("idle_workers")
    if not (isinstance(idle, dict) and idle.get("by_workers")):
        return []
    rows_by_count: dict[str, Any] = idle["by_workers"]
    heading = (
        f"### 9. idle workers ({idle['window_seconds']:.0f} s window, {idle['settle_seconds']:.0f} s after "
        "the last one was ready), then background pickup with all of them running"
    )
    header = [
        "idle workers",
        "Redis cmd/s per worker",
        "of which sent",
        "of which in scripts",
        "busiest worker cmd/s",
        "CPU % of a core per worker",
        "busiest worker CPU %",
        "commandstats cmd/s (all clients)",
        "MONITOR lines/s (all clients)",
        "pickup p50 ms",
        "pickup p99 ms",
        "pickup errors",
        "Redis cmds per pickup (all clients)",
        "workers' CPU ms per pickup (all)",
    ]
    rows = [_idle_row(count, d) for count, d in rows_by_count.items()]
    most = rows_by_count[max(rows_by_count, key=int)]
    sent = ", ".join(f"{name} {fmt(rate, 3)}" for name, rate in most["worker_commands_per_s"].items())
    note = (
        f"What one idle worker sends per second ({most['workers']} workers; `lua:` inside scripts): {sent}."
    )
    return [heading, "", *table(header, rows), note, ""]


# -- 10. metrics and the access log ------------------------------------------------------------------------


def _observability_row(path: str, name: str, d: dict[str, Any], row: dict[str, Any]) -> Row:
    on = name == "on"
    return [
        path,
        "metrics + access log on" if on else "both off",
        d["rps"],
        row["rps_on_vs_off"] if on else "1.00",
        d["p50_ms"],
        d["p99_ms"],
        d["server_cpu_ms_per_req"],
        row["cpu_on_vs_off"] if on else "1.00",
        ", ".join(fmt(v, 3) for v in d["runs_cpu_ms_per_req"]),
        d["errors"],
    ]


def observability_section(results: dict[str, Any]) -> Section:
    cost = results.get("observability")
    if not (isinstance(cost, dict) and cost.get("by_path")):
        return []
    heading = (
        f"### 10. what metrics and the access log cost (stored creates, wrk c{cost['connections']}, two "
        f"servers taking turns: {cost['rounds']} rounds {X} {cost['seconds_per_run']} s each)"
    )
    header = [
        "path",
        "server",
        "req/s",
        f"{X} off",
        "p50 ms (median)",
        "p99 ms (median)",
        "server CPU ms/req",
        f"{X} off",
        "CPU ms/req by run",
        "errors",
    ]
    rows = [
        _observability_row(path, name, row[name], row)
        for path, row in cost["by_path"].items()
        for name in ("on", "off")
    ]
    off = " ".join(f"{k}={v}" for k, v in cost["switched_off"].items())
    medians = ", ".join(
        f"{path} {fmt(row['cpu_on_vs_off_median_round'], 3)}{X}" for path, row in cost["by_path"].items()
    )
    note = (
        f"Two fresh servers, one web process each, alike but for `{off}` on the second; `echo` and "
        f"`bench-up-fast` (the upstream process of scenario 8). Figures pooled over the rounds (CPU "
        f"seconds / requests, requests / seconds); the target reads the median of the rounds' CPU "
        f"ratios: {medians}."
    )
    return [heading, "", *table(header, rows), note, ""]


# -- 11. webhook delivery ---------------------------------------------------------------------------------


def _webhook_row(level: str, d: dict[str, Any]) -> Row:
    ours, base = d["end_to_received"], (d.get("baseline") or {}).get("start_to_received") or {}
    server = d["server_histogram"]
    return [
        f"{level} ({'1 event in flight per creator' if d['waits_for_its_webhook'] else 'back to back'})",
        f"{d['delivered']}/{d['created']}",
        d["missing"],
        ours["p50_ms"],
        ours["p99_ms"],
        ours["max_ms"],
        base.get("p50_ms"),
        base.get("p99_ms"),
        d.get("p50_vs_baseline"),
        d.get("p99_vs_baseline"),
        d["delivered_per_s"],
        d["worker_cpu_ms_per_event"],
        d["redis_commands_per_event"],
        f"{fmt(server.get('mean_ms'))} / ≤{fmt(server.get('p50_le_ms'))} / ≤{fmt(server.get('p99_le_ms'))}",
    ]


def webhooks_section(results: dict[str, Any]) -> Section:
    hooks = results.get("webhooks")
    if not (isinstance(hooks, dict) and hooks.get("by_level")):
        return []
    heading = "### 11. webhook delivery: an interaction's end (its answer received) → its receiver got it"
    header = [
        "level",
        "delivered",
        "missing",
        "p50 ms",
        "p99 ms",
        "max ms",
        "direct POST p50 ms",
        "direct POST p99 ms",
        f"p50 {X} direct",
        f"p99 {X} direct",
        "delivered/s",
        "worker CPU ms/event",
        "Redis cmds/event",
        "server histogram: mean / p50 / p99 ms",
    ]
    rows = [_webhook_row(level, d) for level, d in hooks["by_level"].items()]
    warm = hooks["warmup"]
    note = (
        f"Foreground echo creates, one webhook subscribed; a direct POST: the bench to the same receiver "
        f"(a fresh httpx client each, as the worker's), start → received. Warm-up ({warm['n']} events, "
        f"not counted): p50 {fmt(warm['p50_ms'])} ms, max {fmt(warm['max_ms'])} ms. The server histogram "
        "(`ix_webhook_event_delivery_seconds` from the worker's own /metrics) is read as bucket bounds."
    )
    return [heading, "", *table(header, rows), note, ""]


# -- 12. the list ----------------------------------------------------------------------------------------


def _list_row(query: str, tenant: str, d: dict[str, Any], row: dict[str, Any], size: int) -> Row:
    large = tenant == "large"
    return [
        query.replace("_", " "),
        f"{size:,}",
        d["items_per_page"],
        d["p50_ms"],
        d["p99_ms"],
        row["p50_large_vs_small"] if large else "1.00",
        row["p99_large_vs_small"] if large else "1.00",
        d["redis_commands_per_request"],
        d["server_cpu_ms_per_request"],
        d["redis_cpu_ms_per_request"],
        d["errors"],
    ]


def _list_create_note(listing: dict[str, Any]) -> str:
    """Redis commands per create without labels and with two, and the commands the labels add."""
    plain, labelled = listing["create"]["no_labels"], listing["create"]["two_labels"]
    added = ", ".join(
        f"{name} +{fmt(n - plain['redis_commands'].get(name, 0.0))}"
        for name, n in labelled["redis_commands"].items()
        if n - plain["redis_commands"].get(name, 0.0) >= 0.5
    )
    return (
        f"A create (stored, `echo`, one after the other, {plain['creates']} each): "
        f"{fmt(plain['redis_commands_per_create'])} Redis commands without labels, "
        f"{fmt(labelled['redis_commands_per_create'])} with two (p50 {fmt(plain['latency']['p50_ms'])} and "
        f"{fmt(labelled['latency']['p50_ms'])} ms): the two labels' indexes add "
        f"{fmt(listing['commands_added_by_two_labels'])} ({added})."
    )


def list_section(results: dict[str, Any]) -> Section:
    listing = results.get("list")
    if not (isinstance(listing, dict) and listing.get("by_query")):
        return []
    sizes = listing["tenant_sizes"]
    heading = (
        f"### 12. the list: a page in a tenant of {sizes['small']:,} interactions and in one of "
        f"{sizes['large']:,} (c{listing['connections']}, tenants taking turns, {listing['rounds']} rounds)"
    )
    header = [
        "query",
        "tenant",
        "items",
        "p50 ms",
        "p99 ms",
        f"p50 {X} small",
        f"p99 {X} small",
        "Redis cmds/request",
        "server CPU ms/req",
        "Redis CPU ms/req",
        "errors",
    ]
    rows = [
        _list_row(query, tenant, row[tenant], row, sizes[tenant])
        for query, row in listing["by_query"].items()
        for tenant in ("small", "large")
    ]
    queries = "; ".join(
        f"{q.replace('_', ' ')} `{row['path'].split('?', 1)[1]}`" for q, row in listing["by_query"].items()
    )
    note = (
        f"Queries: {queries}. Seeded through the API ({fmt(listing['seed_seconds'])} s, "
        f"{fmt(listing['seed_per_s'])} creates/s), each with labels `user` (one of {listing['users']}) and "
        f"`bench`, {listing['rare']} of each tenant's with `rare=yes`; load average at the end "
        f"{listing['load_average']}."
    )
    return [heading, "", *table(header, rows), note, "", _list_create_note(listing), ""]


# -- 13. replica_acks ----------------------------------------------------------------------------------


def _acks_row(concurrency: str, name: str, d: dict[str, Any], row: dict[str, Any]) -> Row:
    on = name == "acks1"
    return [
        concurrency,
        "replica_acks = 1" if on else "replica_acks = 0 (default)",
        d["rps"],
        row["rps_ratio"] if on else "1.00",
        d["p50_ms"],
        row["p50_ratio"] if on else "1.00",
        d["p99_ms"],
        row["p99_ratio"] if on else "1.00",
        d["redis_commands_per_request"],
        d["server_cpu_ms_per_req"],
        d["redis_cpu_ms_per_req"],
        d["replica_cpu_ms_per_req"],
        d["errors"],
    ]


def replica_acks_section(results: dict[str, Any]) -> Section:
    acks = results.get("replica_acks")
    if not (isinstance(acks, dict) and acks.get("by_concurrency")):
        return []
    heading = (
        f"### 13. what `[store] replica_acks = 1` costs (stored `echo` creates, wrk, a replica attached, two "
        f"servers taking turns: {acks['rounds']} rounds {X} {acks['seconds_per_run']} s each)"
    )
    header = [
        "conc.",
        "server",
        "req/s",
        f"{X} acks=0",
        "p50 ms (median)",
        f"{X} acks=0",
        "p99 ms (median)",
        f"{X} acks=0",
        "Redis cmds/req",
        "server CPU ms/req",
        "Redis CPU ms/req",
        "replica CPU ms/req",
        "errors",
    ]
    levels: dict[str, Any] = acks["by_concurrency"]
    rows = [_acks_row(c, name, row[name], row) for c, row in levels.items() for name in ("acks0", "acks1")]
    added = "; ".join(
        f"{c}: " + ", ".join(f"{name} {n:+.2f}" for name, n in row["commands_added"].items())
        for c, row in levels.items()
    )
    note = (
        f"Two fresh servers ({acks['web_processes']} web process(es) each), alike but for `[store] "
        f"replica_acks = 1` in the second's IX_CONFIG, against the stack's Redis with a replica attached "
        f"(in sync {fmt(acks['replica_sync_seconds'])} s after its start). Commands per request that "
        f"acks=1 adds: {added}. WAITs that ran out (the server's warnings): "
        f"{acks['unacknowledged_warnings']}; load average at the end {acks['load_average']}."
    )
    return [heading, "", *table(header, rows), note, ""]


#: in the order of the report, after tables.SECTIONS
SECTIONS: tuple[Callable[[dict[str, Any]], Section], ...] = (
    idle_workers_section,
    observability_section,
    webhooks_section,
    list_section,
    replica_acks_section,
)
