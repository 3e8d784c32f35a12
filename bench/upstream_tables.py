"""The table of scenario 8 (issue 12: what users pay on the upstream path; issue 28: the same turn through
the interactions backend), in the form of tables.py: the section takes a run's results and returns its
lines, or none when the scenario did not run or broke."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .stats import ratio
from .tables import Row, Section, fmt, table
from .targets import X, get

#: how the paths of scenario 8 are named in its table, for the openai backend's turn and the interactions one
_PATHS = {"upstream": "upstream alone", "relay": "bare relay", "ours": "ours (stored)"}
_IX_PATHS = {"relay": "bare relay, interactions path", "ours": "ours (stored), interactions backend"}


def _upstream_row(mode: str, concurrency: str, name: str, d: dict[str, Any], ix: bool = False) -> Row:
    return [
        mode,
        concurrency,
        (_IX_PATHS if ix else _PATHS)[name],
        d["rps"],
        # the relay is the 1 of its own column, the upstream has no relay to be a ratio of
        {"upstream": None, "relay": "1.00"}.get(name, d.get("rps_vs_relay")),
        # the interactions rows have no upstream alone beside them (their budget is about 30 s)
        d.get("rps_vs_upstream", None if ix else "1.00"),
        d["p50_ms"],
        d["p99_ms"],
        d["server_cpu_ms_per_req"],
        d.get("upstream_cpu_ms_per_req"),
        d["redis_cpu_ms_per_req"],
        d["errors"],
    ]


def _rows(by_mode: dict[str, Any], ix: bool) -> list[Row]:
    return [
        _upstream_row(mode, c, name, d, ix)
        for mode, by_c in by_mode.items()
        for c, row in by_c.items()
        for name, d in row.items()
    ]


def _background_lines(background: dict[str, Any]) -> list[str]:
    """One-at-a-time requests with the Python client, ours as ratios of the bare relay's request."""
    relay, fore, back = background["relay_request"], background["foreground_create"], background["background"]
    measures = [
        ("bare relay request (relay_once)", relay.get("request")),
        ("ours: stored create", fore.get("request")),
        ("ours: background create response", back.get("create_response")),
        ("ours: background create → interaction.completed (follow stream)", back.get("create_to_completed")),
    ]
    base = get(relay, "request", "p50_ms")
    header = ["one at a time", "n", "p50 ms", "p99 ms", "max ms", f"p50 {X} relay"]
    rows: list[Row] = [
        [name, d["n"], d["p50_ms"], d["p99_ms"], d["max_ms"], ratio(d["p50_ms"], base)]
        for name, d in measures
        if d
    ]
    cpu = (
        f"CPU per background interaction: web process {fmt(back.get('web_cpu_ms'))} ms (create + follow "
        f"stream), worker {fmt(back.get('worker_cpu_ms'))} ms, upstream {fmt(back.get('upstream_cpu_ms'))} "
        f"ms; a stored create: web process {fmt(fore.get('web_cpu_ms'))} ms (/proc ticks of 10 ms over "
        f"{fmt(back.get('create_to_completed', {}).get('n'))} samples)."
    )
    return [*table(header, rows), cpu, ""]


def _bodies(up: dict[str, Any]) -> str:
    sizes = ", ".join(f"{m} {n} B" for m, n in up["upstream_body_bytes"].items())
    streams = ", ".join(f"{mode}: {'yes' if s else 'no'}" for mode, s in up["upstream_body_streams"].items())
    return f"{sizes}; asks for a stream: {streams}"


def upstream_section(results: dict[str, Any]) -> Section:
    up = results.get("upstream")
    if not (isinstance(up, dict) and "by_mode" in up):
        return []
    ix = up.get("interactions") or {}
    through = f", `{ix['model']}` on its Interactions API" if ix else ""
    heading = (
        f"### 8. creates through an upstream in a process of its own (`{up['model']}` on its "
        f"OpenAI-compatible API{through}; wrk, best of {up['best_of']} {X} {up['seconds_per_run']} s)"
    )
    rows = _rows(up["by_mode"], ix=False) + _rows(ix.get("by_mode") or {}, ix=True)
    header = [
        "mode",
        "conc.",
        "path",
        "req/s",
        f"{X} relay",
        f"{X} upstream",
        "p50 ms",
        "p99 ms",
        "server CPU ms/req",
        "upstream CPU ms/req",
        "Redis CPU ms/req",
        "errors",
    ]
    note = (
        f"The body our server sends upstream, replayed to the upstream alone and through the relay: "
        f"{_bodies(up)}. Server CPU is the process under load (for the upstream alone, the upstream itself)."
    )
    if ix:
        note += (
            f" The interactions backend's call (`POST /v1beta/interactions`, Google's event stream back), "
            f"replayed through the relay (`?to=interactions`): {_bodies(ix)}."
        )
    return [heading, "", *table(header, rows), note, "", *_background_lines(up["background"])]


#: in the order of the report, after tables.SECTIONS
SECTIONS: tuple[Callable[[dict[str, Any]], Section], ...] = (upstream_section,)
