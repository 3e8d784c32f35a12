"""Targets (met or missed), the markdown tables, the machine's description, and bench/README.md."""

from __future__ import annotations

import datetime
import platform
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .stats import ratio

X = "\u00d7"  # the multiplication sign of ratios
DASH = "\u2013"
README = Path(__file__).resolve().parent / "README.md"
START = "<!-- bench:results:start -->"
END = "<!-- bench:results:end -->"


# -- machine -----------------------------------------------------------------------------------------------


def _run(*args: str) -> str:
    if shutil.which(args[0]) is None:
        return ""
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    for line in _run("free", "-m").splitlines():
        if line.startswith("Mem:"):
            memory = f"{int(line.split()[1]) / 1024:.1f} GiB"
    redis_version = re.search(r"v=(\S+)", _run("redis-server", "--version"))
    wrk_version = _run("wrk", "--version") or ""
    from importlib.metadata import version

    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": _run("nproc"),
        "cpu": cpu,
        "memory": memory,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "granian": version("granian"),
        "litestar": version("litestar"),
        "redis_server": redis_version.group(1) if redis_version else "",
        "wrk": wrk_version.split(" [")[0] if wrk_version else "",
    }


# -- targets -----------------------------------------------------------------------------------------------


def _get(data: dict[str, Any], *path: str) -> Any:
    value: Any = data
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _target(
    number: str, name: str, measured: float | None, op: str, limit: float, unit: str, detail: str = ""
) -> dict[str, Any]:
    if measured is None:
        met = None
    elif op == ">=":
        met = measured >= limit
    else:
        met = measured <= limit
    return {
        "scenario": number,
        "target": f"{name} {op} {limit:g}{unit}",
        "measured": measured,
        "unit": unit,
        "detail": detail,
        "met": met,
    }


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    create = _get(results, "create", "by_concurrency") or {}
    for store in ("store_true", "store_false"):
        label = store.replace("_", "=")
        ratios = {c: _get(row, store, "rps_ratio") for c, row in create.items()}
        known = [r for r in ratios.values() if r is not None]
        detail = ", ".join(f"{c}: {r}{X}" for c, r in ratios.items())
        out.append(
            _target(
                "1",
                f"create {label}: throughput vs baseline (worst of c1/c16/c64)",
                min(known) if known else None,
                ">=",
                0.5,
                X,
                detail,
            )
        )
        added = _get(create, "c1", store, "p50_added_ms")
        base = _get(create, "c1", "baseline", "p50_ms")
        ours = _get(create, "c1", store, "p50_ms")
        out.append(
            _target(
                "1",
                f"create {label}: p50 added latency at c1",
                added,
                "<=",
                1.0,
                " ms",
                f"{ours} ms vs baseline {base} ms",
            )
        )
        cpu = [_get(row, store, "server_cpu_ms_per_req") for row in create.values()]
        known_cpu = [c for c in cpu if c is not None]
        out.append(
            _target(
                "1",
                f"create {label}: server CPU per request (worst)",
                max(known_cpu) if known_cpu else None,
                "<=",
                1.0,
                " ms",
                f"LiteLLM's proxy: 35{DASH}49 ms",
            )
        )
    depths = _get(results, "chain", "by_depth") or {}
    deepest = max(depths, key=int) if depths else None
    if deepest is not None:
        out.append(
            _target(
                "2",
                f"chain: p50 at depth {deepest} vs depth 1",
                _get(depths, deepest, "p50_vs_depth1"),
                "<=",
                2.0,
                X,
                f"{_get(depths, deepest, 'p50_ms')} ms vs {_get(depths, '1', 'p50_ms')} ms",
            )
        )
    pickup = _get(results, "pickup", "create_to_claim") or {}
    out.append(_target("3", "pickup create → runner start p50", pickup.get("p50_ms"), "<=", 20, " ms"))
    out.append(_target("3", "pickup create → runner start p99", pickup.get("p99_ms"), "<=", 100, " ms"))
    closed = _get(results, "cancel", "cancel_to_upstream_closed") or {}
    out.append(
        _target(
            "4",
            "cancel → upstream connection closed p99",
            closed.get("p99_ms"),
            "<=",
            100,
            " ms",
            f"p50 {closed.get('p50_ms')} ms, max {closed.get('max_ms')} ms",
        )
    )
    relay = _get(results, "stream", "relay") or {}
    for store in ("store_true", "store_false"):
        label = store.replace("_", "=")
        out.append(
            _target(
                "5",
                f"stream {label}: delta events/s through one web process",
                _get(relay, store, "events_per_s"),
                ">=",
                20_000,
                "/s",
                f"server CPU {_get(relay, store, 'server_cpu_us_per_event')} µs/event",
            )
        )
        first = _get(results, "stream", "first_event", store, "after_upstream_first_token") or {}
        out.append(
            _target(
                "5",
                f"stream {label}: first event after upstream's first token p50",
                first.get("p50_ms"),
                "<=",
                2.0,
                " ms",
                f"p99 {first.get('p99_ms')} ms",
            )
        )
    many = _get(results, "many_streams", "ours") or {}
    count = f"{many.get('streams', 1000):,}"
    out.append(
        _target(
            "6",
            f"{count} concurrent streams: errors",
            many.get("errors"),
            "<=",
            0,
            "",
            f"peak concurrent {many['peak_concurrent']}" if many else "",
        )
    )
    out.append(
        _target(
            "6",
            f"{count} concurrent streams: RSS of the web process",
            many.get("rss_peak_mb"),
            "<=",
            300,
            " MB",
            f"idle {many['rss_idle_mb']} MB" if many else "",
        )
    )
    memory = _get(results, "memory", "stored") or {}
    out.append(
        _target(
            "7",
            "Redis memory per one-turn interaction beyond its text",
            memory.get("beyond_text_bytes"),
            "<=",
            2048,
            " B",
            f"{memory.get('memory_bytes')} B for {memory.get('text_bytes')} B of text",
        )
    )
    return out


# -- markdown ----------------------------------------------------------------------------------------------


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return DASH
    if isinstance(value, float):
        if abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_fmt(cell) for cell in row) + " |" for row in rows]
    return [*lines, ""]


def markdown(run: dict[str, Any]) -> str:
    m = run["machine"]
    r = run["results"]
    lines = [
        f"Run of {m['date']} ({'quick' if run['quick'] else 'full'} mode, {run['seconds']:.0f} s): "
        f"{run['web_processes']} web process(es), {run['workers']} worker process(es).",
        f"Machine: {m['nproc']} CPUs ({m['cpu']}), {m['memory']} memory, Linux {m['kernel']}; "
        f"Python {m['python']}, granian {m['granian']}, litestar {m['litestar']}, "
        f"redis-server {m['redis_server']}, {m['wrk']}.",
        "",
        "### Targets",
        "",
    ]
    mark = {True: "met", False: "**missed**", None: "not measured"}
    lines += _table(
        ["#", "Target", "Measured", "Detail", "Result"],
        [
            [t["scenario"], t["target"], f"{_fmt(t['measured'])}{t['unit']}", t["detail"], mark[t["met"]]]
            for t in run["targets"]
        ],
    )
    create = _get(r, "create", "by_concurrency")
    if create:
        lines += [
            "### 1. create, echo model, no stream (wrk, best of "
            f"{r['create']['best_of']} {X} {r['create']['seconds_per_run']} s)",
            "",
        ]
        rows = []
        for c, row in create.items():
            base = row["baseline"]
            rows.append(
                [
                    c,
                    "baseline",
                    base["rps"],
                    "1.00",
                    base["p50_ms"],
                    base["p99_ms"],
                    base["server_cpu_ms_per_req"],
                    base["redis_cpu_ms_per_req"],
                    base["errors"],
                ]
            )
            for store in ("store_true", "store_false"):
                ours = row[store]
                rows.append(
                    [
                        c,
                        store.replace("_", "="),
                        ours["rps"],
                        ours["rps_ratio"],
                        ours["p50_ms"],
                        ours["p99_ms"],
                        ours["server_cpu_ms_per_req"],
                        ours["redis_cpu_ms_per_req"],
                        ours["errors"],
                    ]
                )
        lines += _table(
            [
                "conc.",
                "path",
                "req/s",
                f"{X} baseline",
                "p50 ms",
                "p99 ms",
                "server CPU ms/req",
                "Redis CPU ms/req",
                "errors",
            ],
            rows,
        )
    depths = _get(r, "chain", "by_depth")
    if depths:
        lines += [
            f"### 2. chain depth: a new turn after N stored turns (wrk, c1; chain built in "
            f"{r['chain']['build_seconds']} s)",
            "",
        ]
        lines += _table(
            ["depth", "req/s", "p50 ms", "p99 ms", f"{X} depth 1 (p50)", f"{X} baseline (p50)"],
            [
                [d, row["rps"], row["p50_ms"], row["p99_ms"], row["p50_vs_depth1"], row["p50_vs_baseline"]]
                for d, row in depths.items()
            ],
        )
    pickup = r.get("pickup")
    if isinstance(pickup, dict) and "create_to_claim" in pickup:
        lines += ["### 3. background pickup and 4. cancel (sequential, Python client)", ""]
        rows = [
            ["create → runner claims it (record)", pickup["create_to_claim"]],
            ["create → runner's upstream request", pickup["create_to_upstream_request"]],
            ["create (background) response", pickup["create_response"]],
            ["baseline request (HTTP + SET)", pickup["baseline_request"]],
        ]
        cancel = r.get("cancel")
        if isinstance(cancel, dict) and "cancel_to_upstream_closed" in cancel:
            rows += [
                ["cancel → upstream connection closed", cancel["cancel_to_upstream_closed"]],
                ["cancel response (after the run saved its output)", cancel["cancel_response"]],
            ]
        base_p50 = pickup["baseline_request"]["p50_ms"]
        lines += _table(
            ["measure", "n", "p50 ms", "p99 ms", "max ms", f"p50 {X} baseline request"],
            [
                [name, d["n"], d["p50_ms"], d["p99_ms"], d["max_ms"], ratio(d["p50_ms"], base_p50)]
                for name, d in rows
            ],
        )
    stream = r.get("stream")
    if isinstance(stream, dict) and "relay" in stream:
        lines += [
            f"### 5. streaming through one web process ({stream['flood_deltas_per_stream']:,} deltas per "
            f"stream; first token {stream['first_token_delay_ms']:.0f} ms after the request)",
            "",
        ]
        rows = []
        first_base = stream["first_event"]["baseline"]["after_upstream_first_token"]["p50_ms"]
        for name in ("baseline", "store_true", "store_false"):
            relay, first = stream["relay"][name], stream["first_event"][name]
            label = "baseline (byte relay)" if name == "baseline" else name.replace("_", "=")
            rows.append(
                [
                    label,
                    relay["events_per_s"],
                    relay.get("ratio", 1.0),
                    relay["server_cpu_us_per_event"],
                    relay["server_cores"],
                    relay["bench_process_cores"],
                    first["after_upstream_first_token"]["p50_ms"],
                    ratio(first["after_upstream_first_token"]["p50_ms"], first_base),
                    first["after_upstream_first_token"]["p99_ms"],
                    first["after_request"]["p50_ms"],
                ]
            )
        lines += _table(
            [
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
            ],
            rows,
        )
    many = r.get("many_streams")
    if isinstance(many, dict) and "ours" in many:
        lines += [
            f"### 6. {many['ours']['streams']:,} concurrent streams through one web process "
            f"({many['words_per_stream']} deltas, one per {many['word_interval_ms']:.0f} ms)",
            "",
        ]
        lines += _table(
            [
                "path",
                "errors",
                "peak concurrent",
                "RSS idle MB",
                "RSS peak MB",
                f"{X} baseline",
                "server cores",
                "seconds",
            ],
            [
                [
                    name,
                    d["errors"],
                    d["peak_concurrent"],
                    d["rss_idle_mb"],
                    d["rss_peak_mb"],
                    ratio(d["rss_peak_mb"], many["baseline"]["rss_peak_mb"]),
                    d["server_cores"],
                    d["seconds"],
                ]
                for name, d in (("baseline (byte relay)", many["baseline"]), ("ours", many["ours"]))
            ],
        )
    memory = r.get("memory")
    if isinstance(memory, dict) and "stored" in memory:
        lines += ["### 7. Redis memory per one-turn interaction (MEMORY USAGE over all its keys)", ""]
        rows = [
            [
                "baseline: one string of the text",
                memory["stored"]["text_bytes"],
                memory["baseline_string_bytes"],
                memory["baseline_string_bytes"] - memory["stored"]["text_bytes"],
                1.0,
                "string",
            ]
        ]
        for name in ("stored", "stored_streamed"):
            d = memory[name]
            rows.append(
                [
                    name.replace("_", " + "),
                    d["text_bytes"],
                    d["memory_bytes"],
                    d["beyond_text_bytes"],
                    d["ratio"],
                    " ".join(d["keys"]),
                ]
            )
        lines += _table(["interaction", "text B", "memory B", "beyond text B", f"{X} baseline", "keys"], rows)
    failed = {k: v for k, v in r.items() if isinstance(v, dict) and "error" in v}
    if failed:
        lines += ["### Scenarios that did not finish", ""]
        lines += [f"- {name}: {v['error']}" for name, v in failed.items()] + [""]
    return "\n".join(lines)


def update_readme(table: str, path: Path = README) -> None:
    text = path.read_text() if path.exists() else f"# Benchmarks\n\n{START}\n{END}\n"
    if START not in text or END not in text:
        text = text.rstrip() + f"\n\n## Latest results\n\n{START}\n{END}\n"
    head, rest = text.split(START, 1)
    _old, tail = rest.split(END, 1)
    path.write_text(f"{head}{START}\n{table}\n{END}{tail}")
