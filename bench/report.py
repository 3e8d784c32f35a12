"""The report of a run: the machine's description, the markdown (targets, then a table per scenario), and
its place in bench/README.md. The targets are computed in targets.py (and redis_tables.py: 19, 20), the
scenario tables in tables.py (scenarios 1 to 7), upstream_tables.py (8), cost_tables.py (9 to 13),
cluster_tables.py (14), dialect_tables.py (17, 18), redis_tables.py (19, 20) and limits_tables.py (23)."""

from __future__ import annotations

import datetime
import platform
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from . import (
    cluster_tables,
    cost_tables,
    dialect_tables,
    limits_tables,
    redis_tables,
    tables,
    upstream_tables,
)
from . import targets as scenario_targets
from .scenarios import NUMBERS
from .tables import fmt, table

__all__ = ["machine", "markdown", "targets", "update_readme"]

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


def targets(results: dict[str, Any]) -> list[scenario_targets.Target]:
    """Every target, met or missed, in the order of the scenarios (19 and 20 after targets.py's, then 23)."""
    return [
        *scenario_targets.targets(results),
        *redis_tables.targets(results),
        *limits_tables.targets(results),
    ]


# -- markdown ----------------------------------------------------------------------------------------------

#: what a run of an earlier version, which did not name its scenarios, ran: all of them
SCENARIO_NAMES = tuple(NUMBERS)
#: how the Targets table says met, missed, and a target whose scenario gave no figure
_MARK = {True: "met", False: "**missed**", None: "not measured"}


def _kind(run: dict[str, Any]) -> str:
    """Which run it was: a smoke run, the default one, every scenario, or some."""
    if run["quick"]:
        return "quick mode"
    selection = run.get("selection", "all")
    if selection == "only":
        return f"--only {','.join(run.get('scenarios', []))}"
    return "default run" if selection == "default" else "every scenario, --all"


def _header(run: dict[str, Any]) -> list[str]:
    """What ran, for how long, and on what: ratios are only comparable between like runs."""
    m = run["machine"]
    return [
        f"Run of {m['date']} ({_kind(run)}, {run['seconds']:.0f} s): "
        f"{run['web_processes']} web process(es), {run['workers']} worker process(es).",
        f"Machine: {m['nproc']} CPUs ({m['cpu']}), {m['memory']} memory, Linux {m['kernel']}; "
        f"Python {m['python']}, granian {m['granian']}, litestar {m['litestar']}, "
        f"redis-server {m['redis_server']}, {m['wrk']}.",
        "",
    ]


def _targets_section(run: dict[str, Any]) -> list[str]:
    """Every target of the scenarios the run chose; "not measured" is one whose scenario broke or was cut
    short, and the scenarios left out of the run (the default one, `--only`) are named after the table."""
    chosen = {NUMBERS[name] for name in run.get("scenarios", SCENARIO_NAMES)}
    rows = [
        [t["scenario"], t["target"], f"{fmt(t['measured'])}{t['unit']}", t["detail"], _MARK[t["met"]]]
        for t in run["targets"]
        if t["scenario"] in chosen
    ]
    lines = ["### Targets", "", *table(["#", "Target", "Measured", "Detail", "Result"], rows)]
    left_out = [f"{n} ({name})" for name, n in NUMBERS.items() if n not in chosen]
    if left_out:
        lines += [f"Not in this run (`--all` runs them): {', '.join(left_out)}.", ""]
    return lines


def _failures_section(results: dict[str, Any]) -> list[str]:
    """The scenarios (and the stack) that gave an error instead of figures, each with its reason."""
    failed = {k: v for k, v in results.items() if isinstance(v, dict) and "error" in v}
    if not failed:
        return []
    return [
        "### Scenarios that did not finish",
        "",
        *(f"- {name}: {v['error']}" for name, v in failed.items()),
        "",
    ]


def markdown(run: dict[str, Any]) -> str:
    results = run["results"]
    lines = [*_header(run), *_targets_section(run)]
    for section in (
        *tables.SECTIONS,
        *upstream_tables.SECTIONS,
        *cost_tables.SECTIONS,
        *cluster_tables.SECTIONS,
        *dialect_tables.SECTIONS,
        *redis_tables.SECTIONS,
        *limits_tables.SECTIONS,
    ):
        lines += section(results)
    lines += _failures_section(results)
    return "\n".join(lines)


def update_readme(table: str, path: Path = README) -> None:
    text = path.read_text() if path.exists() else f"# Benchmarks\n\n{START}\n{END}\n"
    if START not in text or END not in text:
        text = text.rstrip() + f"\n\n## Latest results\n\n{START}\n{END}\n"
    head, rest = text.split(START, 1)
    _old, tail = rest.split(END, 1)
    path.write_text(f"{head}{START}\n{table}\n{END}{tail}")
