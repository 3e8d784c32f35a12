"""The markdown table of each scenario's results, under its heading.

Each `*_section` takes a run's results and returns its lines (heading, table, blank line), or no lines when
the scenario did not run or broke: the report lists those separately.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .stats import ratio
from .targets import DASH, STORES, X, get, store_label

Row = list[Any]
Section = list[str]


def fmt(value: Any, digits: int = 2) -> str:
    """None as a dash, large floats without decimals, ints with thousands separators."""
    if value is None:
        return DASH
    if isinstance(value, float):
        if abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def table(header: list[str], rows: list[Row]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(fmt(cell) for cell in row) + " |" for row in rows]
    return [*lines, ""]


# -- 1. create ---------------------------------------------------------------------------------------------


def _create_row(concurrency: str, path: str, figures: dict[str, Any], versus_baseline: Any) -> Row:
    return [
        concurrency,
        path,
        figures["rps"],
        versus_baseline,
        figures["p50_ms"],
        figures["p99_ms"],
        figures["server_cpu_ms_per_req"],
        figures["redis_cpu_ms_per_req"],
        figures["errors"],
    ]


def create_section(results: dict[str, Any]) -> Section:
    create = get(results, "create", "by_concurrency")
    if not create:
        return []
    heading = (
        "### 1. create, echo model, no stream (wrk, best of "
        f"{results['create']['best_of']} {X} {results['create']['seconds_per_run']} s)"
    )
    rows: list[Row] = []
    for c, row in create.items():
        # the baseline's own ratio is the string "1.00": it is 1 by definition, not a measured 1.0
        rows.append(_create_row(c, "baseline", row["baseline"], "1.00"))
        rows += [_create_row(c, store_label(store), row[store], row[store]["rps_ratio"]) for store in STORES]
    header = [
        "conc.",
        "path",
        "req/s",
        f"{X} baseline",
        "p50 ms",
        "p99 ms",
        "server CPU ms/req",
        "Redis CPU ms/req",
        "errors",
    ]
    return [heading, "", *table(header, rows)]


# -- 2. chain depth ----------------------------------------------------------------------------------------


def chain_section(results: dict[str, Any]) -> Section:
    depths = get(results, "chain", "by_depth")
    if not depths:
        return []
    heading = (
        f"### 2. chain depth: a new turn after N stored turns (wrk, c1; chain built in "
        f"{results['chain']['build_seconds']} s)"
    )
    header = ["depth", "req/s", "p50 ms", "p99 ms", f"{X} depth 1 (p50)", f"{X} baseline (p50)"]
    rows: list[Row] = [
        [d, row["rps"], row["p50_ms"], row["p99_ms"], row["p50_vs_depth1"], row["p50_vs_baseline"]]
        for d, row in depths.items()
    ]
    return [heading, "", *table(header, rows)]


# -- 3. background pickup and 4. cancel --------------------------------------------------------------------


def _cancel_measures(results: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Scenario 4's rows, which share scenario 3's table (and its baseline request) when both ran."""
    cancel = results.get("cancel")
    if not (isinstance(cancel, dict) and "cancel_to_upstream_closed" in cancel):
        return []
    return [
        ("cancel → upstream connection closed", cancel["cancel_to_upstream_closed"]),
        ("cancel response (after the run saved its output)", cancel["cancel_response"]),
    ]


def pickup_cancel_section(results: dict[str, Any]) -> Section:
    pickup = results.get("pickup")
    if not (isinstance(pickup, dict) and "create_to_claim" in pickup):
        return []
    measures = [
        ("create → runner claims it (record)", pickup["create_to_claim"]),
        ("create → runner's upstream request", pickup["create_to_upstream_request"]),
        ("create (background) response", pickup["create_response"]),
        ("baseline request (HTTP + SET)", pickup["baseline_request"]),
        *_cancel_measures(results),
    ]
    base_p50 = pickup["baseline_request"]["p50_ms"]
    header = ["measure", "n", "p50 ms", "p99 ms", "max ms", f"p50 {X} baseline request"]
    rows: list[Row] = [
        [name, d["n"], d["p50_ms"], d["p99_ms"], d["max_ms"], ratio(d["p50_ms"], base_p50)]
        for name, d in measures
    ]
    return ["### 3. background pickup and 4. cancel (sequential, Python client)", "", *table(header, rows)]


# -- 5. streaming ------------------------------------------------------------------------------------------


def _stream_row(stream: dict[str, Any], name: str, first_base: float | None) -> Row:
    relay, first = stream["relay"][name], stream["first_event"][name]
    after_token = first["after_upstream_first_token"]
    return [
        "baseline (byte relay)" if name == "baseline" else store_label(name),
        relay["events_per_s"],
        # the baseline has no ratio of its own in the results: it is the 1
        relay.get("ratio", 1.0),
        relay["server_cpu_us_per_event"],
        relay["server_cores"],
        relay["bench_process_cores"],
        after_token["p50_ms"],
        ratio(after_token["p50_ms"], first_base),
        after_token["p99_ms"],
        first["after_request"]["p50_ms"],
    ]


def stream_section(results: dict[str, Any]) -> Section:
    stream = results.get("stream")
    if not (isinstance(stream, dict) and "relay" in stream):
        return []
    heading = (
        f"### 5. streaming through one web process ({stream['flood_deltas_per_stream']:,} deltas per "
        f"stream; first token {stream['first_token_delay_ms']:.0f} ms after the request)"
    )
    first_base = stream["first_event"]["baseline"]["after_upstream_first_token"]["p50_ms"]
    rows = [_stream_row(stream, name, first_base) for name in ("baseline", *STORES)]
    header = [
        "path",
        "deltas/s",
        f"{X} baseline",
        "server µs/delta",
        "server cores",
        "bench cores",
        "first delta after upstream token p50 ms",
        f"{X} baseline",
        "p99 ms",
        "request → first delta p50 ms",
    ]
    return [heading, "", *table(header, rows)]


# -- 6. many streams ---------------------------------------------------------------------------------------


def _many_row(name: str, d: dict[str, Any], base_kb: Any) -> Row:
    low, high = d["deltas_per_stream"]
    return [
        name,
        d["streams"],
        d["sockets_per_stream"],
        f"{low}" if low == high else f"{low}{DASH}{high}",
        d["errors"],
        d["peak_concurrent"],
        d["open_seconds"],
        d["rss_idle_mb"],
        d["rss_peak_mb"],
        d["rss_kb_per_stream"],
        ratio(d["rss_kb_per_stream"], base_kb),
        d["fds_peak"],
        d["server_cores"],
        d["server_cpu_ms_per_stream"],
        d["seconds"],
    ]


def many_streams_section(results: dict[str, Any]) -> Section:
    many = results.get("many_streams")
    if not (isinstance(many, dict) and "echo_slow" in many):
        return []
    echo, up, base = many["echo_slow"], many["upstream"], many["baseline"]
    heading = f"### 6. {echo['wanted']:,} concurrent slow streams through one web process"
    header = [
        "path",
        "streams",
        "sockets per stream",
        "deltas per stream",
        "errors",
        "peak concurrent",
        "all open after s",
        "RSS idle MB",
        "RSS peak MB",
        "KB per stream",
        f"{X} baseline",
        "open fds peak",
        "server cores",
        "server CPU ms per stream",
        "seconds",
    ]
    base_kb = base["rss_kb_per_stream"]
    rows = [
        _many_row("baseline (byte relay of bench-drip)", base, base_kb),
        _many_row("ours: echo-slow, stored, streamed", echo, base_kb),
        _many_row("ours: bench-drip through the upstream, stored, streamed", up, base_kb),
    ]
    return [heading, "", *table(header, rows), _many_note(many), ""]


def _many_note(many: dict[str, Any]) -> str:
    """What each variant's streams are, and why there are two (the descriptors a stream holds)."""
    echo, up, plan = many["echo_slow"], many["upstream"], many["plan"]
    return (
        f"echo-slow answers its input a word every {plan['many_echo_word_delay_ms']:,} ms, each input as "
        f"long as keeps its stream open until {plan['many_echo_slack_seconds']:g} s after the ramp's planned "
        f"end; bench-drip's upstream sends {plan['drip_words']} deltas {plan['drip_interval']:g} s apart, "
        f"the last once all streams are open and have been for {plan['many_hold_seconds']:g} s. Either ends "
        f"{plan['many_end_per_second']:,.0f} streams a second. Two variants because a stream through an "
        "upstream holds two sockets in the web process (its client's and its upstream connection) and an "
        "echo-slow stream one, and a process may not open more descriptors than its hard `ulimit -n` "
        f"({up['fd_limit']:,} here; the bench raises the soft limit to it), beside the ~150 it keeps for "
        f"itself (Redis pool, logs): {up['streams']:,} streams through the upstream fit of {up['wanted']:,} "
        f"wanted, {echo['streams']:,} echo-slow ones. The targets' count, errors and RSS are read from "
        "echo-slow; the upstream's errors and RSS are targets of their own. KB per stream: (peak - idle RSS) "
        "/ peak concurrent streams, each of ours on a fresh server."
    )


# -- 7. Redis memory ---------------------------------------------------------------------------------------


def memory_section(results: dict[str, Any]) -> Section:
    memory = results.get("memory")
    if not (isinstance(memory, dict) and "stored" in memory):
        return []
    text_bytes, floor = memory["stored"]["text_bytes"], memory["baseline_string_bytes"]
    rows: list[Row] = [
        ["baseline: one string of the text", text_bytes, floor, floor - text_bytes, 1.0, 1, "string"]
    ]
    for label, d, kept in (
        ("stored", memory["stored"], ""),
        ("stored + streamed, its log kept", memory["stored_streamed"], ""),
        ("stored + streamed, after its log's hour", memory["stored_streamed"], "kept_"),
    ):
        if kept and "kept_memory_bytes" not in d:
            continue
        keys = " ".join(f"{name} {size:,}" for name, size in d["keys"].items())
        used = d[f"{kept}memory_bytes"]
        rows.append(
            [
                label,
                d["text_bytes"],
                used,
                d[f"{kept}beyond_text_bytes"],
                ratio(used, floor),
                d.get(f"{kept}keys_per_interaction", d["keys_per_interaction"]),
                keys,
            ]
        )
    header = [
        "interaction",
        "text B",
        "memory B",
        "beyond text B",
        f"{X} baseline",
        "keys each",
        "its keys (MEMORY USAGE B)",
    ]
    creates = memory["stored"].get("creates", 0)
    heading = f"### 7. Redis memory per one-turn interaction (used_memory over {creates:,} creates of each)"
    return [heading, "", *table(header, rows)]


#: in the order of the report
SECTIONS: tuple[Callable[[dict[str, Any]], Section], ...] = (
    create_section,
    chain_section,
    pickup_cancel_section,
    stream_section,
    many_streams_section,
    memory_section,
)
