"""The shape of the code, as budgets: imports point down the layers, and no module or function outgrows
what a reader can hold (README, "Architecture"). Read from the source, no server."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "server"

#: the packages (and top-level modules) of server/, lowest first: each may import only lower ones
LAYERS: list[set[str]] = [
    # the table of backend kinds: pure data that the config, the traces and the router read
    {"backend_kinds"},
    {"errors", "config_errors", "observability"},
    {"protocol", "sections", "redis_env"},
    {"settings"},
    # the rules of every call out (proxies, trust store), which upstreams, webhooks and tools all follow
    {"outbound"},
    # the codecs of OpenAI's dialects (and Gemini's generateContent): pure, over protocol/'s types
    {"dialects"},
    {"store", "upstream"},
    # signing, delivery: above the store, whose records they keep (its own layer, so events may use it)
    {"webhooks"},
    # tools the server runs itself (remote MCP servers): they use the webhooks' address rules
    {"tools"},
    # the Agents resource: stored agents, and how an interaction naming one runs (the runner applies it)
    {"agents"},
    # finding stored interactions: lists, searches and deletes by filter, over the store's indexes; and
    # what tenants used, over the totals the settles keep
    {"search", "usage"},
    # operators' limits per tenant: admitting a create, a run's token budget (the runner asks them)
    {"limits"},
    {"events"},
    {"runner"},
    # the Triggers resource: interactions created on a schedule, by the runner's create
    {"triggers"},
    {"runtime", "api"},
    {"worker_jobs", "launch"},
    {"worker_host"},
    {"app"},
    {"__main__"},
]
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}
MAX_MODULE_LINES = 300
#: the concepts that need more, each in one module
LONGER_MODULES = {
    # the Responses API's streaming grammar: every event it renders, from our frames one by one and in
    # runs, in the one place the dialect's grammar lives
    "server/dialects/responses/events.py": 330,
    # a run's every write under its fence (claim, log, settle with its usage, cancel, requeue, its remote
    # run's id), each beside the script it calls
    "server/store/runs.py": 320,
    # every section of server.toml, each a Struct with the ranges of its values, in the one place the
    # settings' shapes live (config/server.toml documents them in the same order)
    "server/sections.py": 340,
    # every Redis key name, in the one place the house keeps them (the queue's turns took it past 320)
    "server/store/keys.py": 330,
    # the create use case: its admission (a repeat of an admitted create answered at the limit) and ordered
    # pre-flight, then one short executor per mode
    "server/runner/create.py": 330,
    # the one loader of the settings: the files, the environment, the checks across fields, and the
    # [auth] limits read again while the server runs
    "server/settings.py": 320,
}
MAX_FUNCTION_LINES = 60


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(SERVER.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def imported(module: str, path: Path) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import of the project in `path`."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                yield node.lineno, ".".join([*base, *([node.module] if node.module else [])])
            elif node.module:
                yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_every_package_has_a_layer() -> None:
    unplaced = {layer_of(module) for module, _path in modules()} - set(RANK) - {"server"}
    assert not unplaced, f"place these in LAYERS: {sorted(unplaced)}"


def test_imports_point_down_the_layers() -> None:
    wrong = []
    for module, path in modules():
        own = layer_of(module)
        for line, target in imported(module, path):
            if target.startswith("workers"):
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {target} (workers/ is an entry point)")
            if not target.startswith("server.") or own == "server":
                continue
            other = layer_of(target)
            if other != own and RANK.get(other, -1) >= RANK[own]:
                wrong.append(f"{path.relative_to(ROOT)}:{line} ({own}) imports {target} ({other})")
    assert not wrong, "\n".join(wrong)


def test_no_module_over_its_budget() -> None:
    long = [
        f"{path.relative_to(ROOT)}: {n} lines"
        for _module, path in modules()
        if (n := len(path.read_text().splitlines()))
        > LONGER_MODULES.get(str(path.relative_to(ROOT)), MAX_MODULE_LINES)
    ]
    assert not long, "\n".join(long)


def test_no_function_over_its_budget() -> None:
    long = []
    for _module, path in modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {lines} lines")
    assert not long, "\n".join(long)
