"""Scenario 14, one Redis against a 3-node Redis Cluster: stored foreground `echo` creates (scenario 1's
request, scenario 13's BODY) from 64 tenants on two servers of the scenario's own, alike (as many web
processes as the stack's server, the stack's workers) but for where their records live:

- "one": the stack's Redis, as shipped (REDIS_URL only);
- "cluster": REDIS_URL = a 3-node Cluster on loopback (tests/ha/cluster_nodes.py, primaries only, under the
  run's workdir), REDIS_QUEUE_URL = the stack's Redis (arq's queue, the running set, pub/sub), which the
  stack's workers consume for both.

Each tenant (a digest of its API key) has all its keys in one slot, so a Cluster spreads tenants, not one
tenant's traffic: wrk's requests take turns among `TENANTS` API keys (bench/post.lua), for both servers
alike. The servers take turns as in scenario 13: at c1 and c16, `cluster_rounds` rounds of one wrk run of
`cluster_seconds` on each, the order swapped every round, after a warm-up of each. Each run lies between a
CONFIG RESETSTAT and an INFO commandstats on every Redis the server uses (one: the stack's; cluster: the three
nodes and the stack's, which holds its queue). CPU: the server's processes from /proc (as in scenario 1),
each Redis apart from its INFO cpu (used_cpu_sys + used_cpu_user: microseconds, where /proc counts 10 ms
ticks, too coarse for a node's share of a 2 s run).
Pooled per server over the rounds: requests / seconds, CPU seconds / requests, commands / requests, the
median of the runs' p50 and p99; ratios are cluster over one.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Redis
from redis.crc import key_slot

from server.store.keys import tenant_prefix
from tests.ha.cluster_nodes import Cluster

from ..procs import WebServer
from ..redis_watch import command_calls
from ..stats import ratio
from ..wrk import Pids, WrkResult, run_wrk
from .common import CREATE, Bench
from .listing import _load_average
from .replicas import BODY, stop_servers

SERVERS = ("one", "cluster")
CONNECTIONS = (1, 16)
NODES = 3
#: how many API keys (tenants) the requests take turns among
TENANTS = 64
API_KEYS = tuple(f"bench-tenant-{index:02d}" for index in range(TENANTS))


@dataclass(frozen=True)
class Watched:
    """The Redis processes a server's requests land on: the stack's, and the Cluster's nodes (one: none),
    each through a client of its own (which follows no redirection)."""

    stack: Redis
    nodes: list[Redis] = field(default_factory=list)


@dataclass
class Runs:
    """One server's runs at one concurrency: what wrk measured, and what they cost each Redis."""

    nodes: int
    requests: int = 0
    seconds: float = 0.0
    errors: int = 0
    server_cpu: float = 0.0
    stack_cpu: float = 0.0
    stack_commands: Counter[str] = field(default_factory=Counter)
    node_cpu: list[float] = field(default_factory=list)
    node_commands: list[int] = field(default_factory=list)
    p50s: list[float] = field(default_factory=list)
    p99s: list[float] = field(default_factory=list)
    commands: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.node_cpu = [0.0] * self.nodes
        self.node_commands = [0] * self.nodes

    def figures(self) -> dict[str, Any]:
        n = self.requests or 1
        nodes_cpu = sum(self.node_cpu)
        return {
            "requests": self.requests,
            "rps": round(self.requests / self.seconds, 1) if self.seconds else None,
            "p50_ms": round(statistics.median(self.p50s), 3) if self.p50s else None,
            "p99_ms": round(statistics.median(self.p99s), 3) if self.p99s else None,
            "runs_p50_ms": [round(v, 3) for v in self.p50s],
            "errors": self.errors,
            "server_cpu_ms_per_req": round(self.server_cpu * 1000 / n, 4),
            # every Redis together: one's; the cluster's nodes and its queue Redis
            "redis_cpu_ms_per_req": round((self.stack_cpu + nodes_cpu) * 1000 / n, 4),
            "stack_redis_cpu_ms_per_req": round(self.stack_cpu * 1000 / n, 4),
            "nodes_cpu_ms_per_req": round(nodes_cpu * 1000 / n, 4),
            "node_cpu_ms_per_req": [round(c * 1000 / n, 4) for c in self.node_cpu],
            "node_cpu_share": [round(c / nodes_cpu, 3) if nodes_cpu else None for c in self.node_cpu],
            "redis_commands_per_request": round(sum(self.commands.values()) / n, 2),
            "stack_redis_commands_per_request": round(sum(self.stack_commands.values()) / n, 2),
            "node_commands_per_request": [round(c / n, 2) for c in self.node_commands],
            "redis_commands": {name: round(c / n, 2) for name, c in self.commands.most_common(12)},
            "stack_redis_commands": {name: round(c / n, 2) for name, c in self.stack_commands.most_common(6)},
        }


async def _wrk(b: Bench, server: WebServer, connections: int, seconds: float) -> WrkResult:
    return await run_wrk(
        server.url + CREATE,
        json.dumps(BODY).encode(),
        api_key=API_KEYS[0],
        api_keys=API_KEYS,
        connections=connections,
        seconds=seconds,
        # each Redis's CPU is read from its INFO instead (`_run`)
        pids=Pids(server.pids(), []),
        workdir=b.workdir,
    )


async def _run(b: Bench, server: WebServer, connections: int, watched: Watched, runs: Runs) -> None:
    """One wrk run on `server`, with the commands and the CPU of every Redis it uses over it."""
    clients = [watched.stack, *watched.nodes]
    await asyncio.gather(*(client.config_resetstat() for client in clients))
    before = await asyncio.gather(*(redis_cpu(client) for client in clients))
    result = await _wrk(b, server, connections, b.plan.cluster_seconds)
    after = await asyncio.gather(*(redis_cpu(client) for client in clients))
    used = [now - was for now, was in zip(after, before, strict=True)]
    calls = await asyncio.gather(*(command_calls(client) for client in clients))
    runs.stack_cpu += used[0]
    runs.stack_commands += calls[0]
    for index, (cpu, counted) in enumerate(zip(used[1:], calls[1:], strict=True)):
        runs.node_cpu[index] += cpu
        runs.node_commands[index] += sum(counted.values())
    for counted in calls:
        runs.commands += counted
    runs.requests += result.requests
    runs.seconds += result.seconds
    runs.errors += result.errors
    runs.server_cpu += result.server_cpu_ms * result.requests / 1000
    runs.p50s.append(result.p50_ms)
    runs.p99s.append(result.p99_ms)


async def _level(
    b: Bench, servers: dict[str, WebServer], connections: int, watched: dict[str, Watched]
) -> dict[str, Any]:
    """Both servers taking turns at one concurrency; the cluster's figures as ratios of one's."""
    runs = {name: Runs(len(watched[name].nodes)) for name in servers}
    for index in range(b.plan.cluster_rounds):
        order = list(servers) if index % 2 == 0 else list(reversed(servers))
        for name in order:
            await _run(b, servers[name], connections, watched[name], runs[name])
    one, cluster = runs["one"].figures(), runs["cluster"].figures()
    ratios = {
        f"{figure}_ratio": ratio(cluster[figure], one[figure])
        for figure in ("rps", "p50_ms", "p99_ms", "server_cpu_ms_per_req", "redis_cpu_ms_per_req")
    }
    commands = ratio(cluster["redis_commands_per_request"], one["redis_commands_per_request"])
    return {"one": one, "cluster": cluster, **ratios, "commands_ratio": commands}


async def redis_cpu(client: Redis) -> float:
    """The CPU time (system and user) a Redis has used so far, in seconds, from its INFO."""
    info = await client.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def _tenants_per_node(cluster: Cluster) -> list[int]:
    """How many of the API keys' tenants each node serves (open mode: the tenant is the key's digest, its
    hash tag in every key: store/keys.py)."""
    owners: Counter[int] = Counter()
    for key in API_KEYS:
        tenant = hashlib.sha256(key.encode()).hexdigest()[:32]
        owners[cluster.owner(key_slot(f"{tenant_prefix(tenant)}x".encode()))] += 1
    return [owners[port] for port in cluster.ports]


async def _servers(b: Bench, cluster: Cluster) -> dict[str, WebServer]:
    processes = b.server.processes
    started = await asyncio.gather(
        b.stack.start_server("server-redis-one", processes),
        b.stack.start_server(
            "server-redis-cluster", processes, REDIS_URL=cluster.url, REDIS_QUEUE_URL=b.stack.redis_url
        ),
    )
    return dict(zip(SERVERS, started, strict=True))


async def cluster_cost(b: Bench) -> dict[str, Any]:
    cluster = Cluster(b.workdir / "redis-cluster", size=NODES)
    servers: dict[str, WebServer] = {}
    nodes = [Redis(host="127.0.0.1", port=port) for port in cluster.ports]
    try:
        began = time.monotonic()
        await asyncio.to_thread(cluster.start)
        start_seconds = time.monotonic() - began
        tenants = await asyncio.to_thread(_tenants_per_node, cluster)
        servers = await _servers(b, cluster)
        watched = {"one": Watched(b.redis), "cluster": Watched(b.redis, nodes)}
        # warm up: pools, scripts, the Cluster's slot map, every tenant's first request
        for server in servers.values():
            await _wrk(b, server, 16, 1)
        levels = {f"c{c}": await _level(b, servers, c, watched) for c in CONNECTIONS}
    finally:
        await stop_servers(b, [server.child for server in servers.values()])
        for node in nodes:
            await node.aclose()
        await asyncio.to_thread(cluster.stop)
    return {
        "rounds": b.plan.cluster_rounds,
        "seconds_per_run": b.plan.cluster_seconds,
        "web_processes": b.server.processes,
        "nodes": NODES,
        "tenants": TENANTS,
        "tenants_per_node": tenants,
        "cluster_start_seconds": round(start_seconds, 2),
        "load_average": _load_average(),
        "by_concurrency": levels,
    }
