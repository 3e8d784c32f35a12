"""The tables of scenario 14 (one Redis against a 3-node Redis Cluster), in the form of tables.py: the
measured figures per server and concurrency, and what they imply at c16: the creates a second one Redis core
sustains, and the cores a thousand interactions a second need. Each section takes a run's results and
returns its lines, or none when the scenario did not run or broke."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .tables import Row, Section, fmt, table
from .targets import DASH, X

#: the concurrency the derived figures are read at (the busier one: fixed costs weigh least)
LEVEL = "c16"


def _share(d: dict[str, Any]) -> str:
    """Each node's CPU ms per request and its share of the nodes' CPU: "0.04 / 0.03 / 0.03 (40/30/30 %)"."""
    per = d.get("node_cpu_ms_per_req") or []
    if not per:
        return DASH
    shares = "/".join(f"{100 * s:.0f}" if s is not None else DASH for s in d.get("node_cpu_share") or [])
    return " / ".join(f"{ms:.3f}" for ms in per) + f" ({shares} %)"


def _row(concurrency: str, name: str, d: dict[str, Any], row: dict[str, Any]) -> Row:
    cluster = name == "cluster"
    return [
        concurrency,
        "Cluster (3 nodes) + queue Redis" if cluster else "one Redis (as shipped)",
        d["rps"],
        row["rps_ratio"] if cluster else "1.00",
        d["p50_ms"],
        row["p50_ms_ratio"] if cluster else "1.00",
        d["p99_ms"],
        row["p99_ms_ratio"] if cluster else "1.00",
        d["server_cpu_ms_per_req"],
        d["redis_cpu_ms_per_req"],
        row["redis_cpu_ms_per_req_ratio"] if cluster else "1.00",
        _share(d),
        d["stack_redis_cpu_ms_per_req"] if cluster else DASH,
        d["redis_commands_per_request"],
        d["errors"],
    ]


def _measured(data: dict[str, Any]) -> Section:
    heading = (
        f"### 14. one Redis against a Redis Cluster (stored `echo` creates from {data['tenants']} tenants, "
        f"wrk, two servers taking turns: {data['rounds']} rounds {X} {data['seconds_per_run']} s each)"
    )
    header = [
        "conc.",
        "records on",
        "req/s",
        f"{X} one",
        "p50 ms (median)",
        f"{X} one",
        "p99 ms (median)",
        f"{X} one",
        "server CPU ms/req",
        "Redis CPU ms/req (all)",
        f"{X} one",
        "per node ms/req (share)",
        "queue Redis ms/req",
        "Redis cmds/req",
        "errors",
    ]
    levels: dict[str, Any] = data["by_concurrency"]
    rows = [_row(c, name, row[name], row) for c, row in levels.items() for name in ("one", "cluster")]
    stack = "; ".join(
        f"{c}: {row['cluster']['stack_redis_commands_per_request']} on the queue Redis, nodes "
        + " / ".join(fmt(n) for n in row["cluster"]["node_commands_per_request"])
        for c, row in levels.items()
    )
    note = (
        f"Two fresh servers ({data['web_processes']} web process(es) each), alike but for REDIS_URL: the "
        f"stack's Redis, or a {data['nodes']}-node Cluster on loopback (started in "
        f"{fmt(data['cluster_start_seconds'])} s) with REDIS_QUEUE_URL on the stack's Redis. Tenants per "
        f"node: {' / '.join(str(n) for n in data['tenants_per_node'])}. The Cluster's commands per request: "
        f"{stack}. "
        f"Every Redis shares the machine's cores with the servers, the workers and wrk: the ratios hold, the "
        f"Cluster's absolute throughput is not what three machines would give. Load average at the end "
        f"{data['load_average']}."
    )
    return [heading, "", *table(header, rows), note, ""]


def _per_core(ms: float | None) -> float | None:
    """Creates a second that one core sustains at `ms` of CPU per create."""
    return round(1000 / ms) if ms else None


def _derived(data: dict[str, Any]) -> Section:
    level = data["by_concurrency"].get(LEVEL)
    if not level:
        return []
    one, cluster = level["one"], level["cluster"]
    busiest = max(cluster["node_cpu_ms_per_req"] or [0.0])
    capacity = [
        [
            "one Redis",
            one["redis_cpu_ms_per_req"],
            DASH,
            one["redis_cpu_ms_per_req"],
            one["server_cpu_ms_per_req"],
        ],
        [
            "Cluster + queue Redis",
            cluster["nodes_cpu_ms_per_req"],
            cluster["stack_redis_cpu_ms_per_req"],
            cluster["redis_cpu_ms_per_req"],
            cluster["server_cpu_ms_per_req"],
        ],
    ]
    return [
        f"#### 14, derived at {LEVEL}: what one Redis core sustains, and the cores 1,000 creates/s need",
        "",
        f"- one Redis: {fmt(_per_core(one['redis_cpu_ms_per_req']))} creates/s per core "
        f"(1000 / {fmt(one['redis_cpu_ms_per_req'], 4)} ms).",
        f"- a Cluster node: {fmt(_per_core(cluster['nodes_cpu_ms_per_req']))} creates/s per core (1000 / "
        f"{fmt(cluster['nodes_cpu_ms_per_req'], 4)} ms, the nodes' CPU per create: each create runs on one "
        f"node); 3 nodes on a core each: {fmt(_per_core(busiest))} creates/s, when the busiest node "
        f"({fmt(busiest, 4)} ms per create of all) is saturated; the queue Redis beside them: "
        f"{fmt(_per_core(cluster['stack_redis_cpu_ms_per_req']))} creates/s per core.",
        "",
        *table(
            [
                "per 1,000 creates/s",
                "records Redis cores",
                "queue Redis cores",
                "Redis cores (all)",
                "web CPU cores",
            ],
            capacity,
        ),
        "Cores = CPU ms per create (at 1,000 a second), measured on loopback: real hosts add their network "
        "round trips to the latencies, not to these figures.",
        "",
    ]


def cluster_section(results: dict[str, Any]) -> Section:
    data = results.get("cluster")
    if not (isinstance(data, dict) and data.get("by_concurrency")):
        return []
    return [*_measured(data), *_derived(data)]


#: in the order of the report, after cost_tables.SECTIONS
SECTIONS: tuple[Callable[[dict[str, Any]], Section], ...] = (cluster_section,)
