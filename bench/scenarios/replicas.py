"""Scenario 13, what `[store] replica_acks = 1` costs: stored foreground `echo` creates (scenario 1's
request) on two servers of the scenario's own, one as shipped (`replica_acks = 0`) and one whose IX_CONFIG
sets `replica_acks = 1`, everything else alike (as many web processes as the stack's server, the stack's
Redis and workers).

With acks on, every writing script is followed by `WAIT 1 <timeout>` on the same connection, and the scripts
go through redis-py's pool instead of the pipelined client (server/store/direct.py): a WAIT would hold every
request pipelined behind it. The figure is both together, which is what a user who turns it on pays.

A replica of the stack's Redis (`redis-server --replicaof`, no persistence, its own directory under the run's
workdir) runs for the whole scenario, attached while both servers are measured: the primary feeds it every
write either way, so the two differ only by the WAIT and the client. It is stopped at the end.

The servers take turns, as in scenario 10 (a shared machine's noise falls on both alike): at c1 and c16,
`acks_rounds` rounds of one wrk run of `acks_seconds` on each, the order swapped every round, after a warm-up
of each. Each run lies between a CONFIG RESETSTAT and an INFO commandstats on the primary: Redis commands per
request, the WAIT and the replica's REPLCONF ACKs included (the stack's idle workers add about 2 a second).
Pooled per server over the rounds: requests / seconds, CPU seconds / requests (server, primary, replica), and
the median of the runs' p50 and p99; ratios are acks=1 over acks=0.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import statistics
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from server.launch.redis_process import free_port

from ..procs import Child, WebServer, cpu_seconds
from ..redis_watch import command_calls
from ..stats import ratio
from .common import PROMPT, Bench
from .listing import _load_average

#: the two servers, by name: what each one's IX_CONFIG says (none: the defaults)
SERVERS: dict[str, str | None] = {"acks0": None, "acks1": "[store]\nreplica_acks = 1\n"}
BODY: dict[str, Any] = {"model": "echo", "input": PROMPT}
CONNECTIONS = (1, 16)
#: how long the replica may take to attach (a full sync of whatever the run stored before it)
SYNC_SECONDS = 30.0
#: what the acks=1 server logs when a WAIT ran out before the replica had the write (server/store/
#: replica_acks.py); its writes then skip the WAIT for a few seconds, which would flatter acks=1's figures
UNACKNOWLEDGED = "a failover now could lose"


@dataclass
class Runs:
    """One server's runs at one concurrency: what wrk measured, and what each run cost Redis and the
    replica."""

    requests: int = 0
    seconds: float = 0.0
    errors: int = 0
    server_cpu: float = 0.0
    redis_cpu: float = 0.0
    replica_cpu: float = 0.0
    p50s: list[float] = field(default_factory=list)
    p99s: list[float] = field(default_factory=list)
    commands: Counter[str] = field(default_factory=Counter)

    def figures(self) -> dict[str, Any]:
        n = self.requests or 1
        return {
            "requests": self.requests,
            "rps": round(self.requests / self.seconds, 1) if self.seconds else None,
            "p50_ms": round(statistics.median(self.p50s), 3) if self.p50s else None,
            "p99_ms": round(statistics.median(self.p99s), 3) if self.p99s else None,
            "runs_p50_ms": [round(v, 3) for v in self.p50s],
            "errors": self.errors,
            "server_cpu_ms_per_req": round(self.server_cpu * 1000 / n, 4),
            "redis_cpu_ms_per_req": round(self.redis_cpu * 1000 / n, 4),
            "replica_cpu_ms_per_req": round(self.replica_cpu * 1000 / n, 4),
            "redis_commands_per_request": round(sum(self.commands.values()) / n, 2),
            "redis_commands": {name: round(c / n, 2) for name, c in self.commands.most_common()},
        }


async def _replica(b: Bench) -> tuple[Child, float]:
    """A replica of the stack's Redis on a free loopback port, once its link to the primary is up; the
    seconds that took."""
    port, primary = free_port(), b.stack.redis.port
    directory = b.workdir / "redis-replica"
    directory.mkdir(parents=True, exist_ok=True)
    args = [
        "redis-server",
        "--port", str(port),
        "--bind", "127.0.0.1",
        "--replicaof", "127.0.0.1", str(primary),
        "--save", "",
        "--appendonly", "no",
        "--dir", str(directory),
    ]  # fmt: skip
    # Redis 7 starts a diskless full sync only after `repl-diskless-sync-delay` (5 s, waiting for more
    # replicas): none is coming, so the bench's own Redis starts it at once, and gets its setting back
    setting = "repl-diskless-sync-delay"
    delay = (await b.redis.config_get(setting)).get(setting, "5")
    await b.redis.config_set(setting, 0)
    child = Child("redis-replica", args, b.stack.env(), b.workdir / "redis-replica.log").start()
    b.stack.children.append(child)
    began = time.monotonic()
    client = Redis(host="127.0.0.1", port=port)
    try:
        async with asyncio.timeout(SYNC_SECONDS):
            while True:
                if not child.alive():
                    raise RuntimeError(f"the replica exited:\n{child.log()[-2000:]}")
                try:
                    if (await client.info("replication")).get("master_link_status") == "up":
                        break
                except (OSError, RedisConnectionError):
                    pass  # not listening yet
                await asyncio.sleep(0.05)
    finally:
        await client.aclose()
        await b.redis.config_set(setting, delay)
    return child, time.monotonic() - began


async def _server(b: Bench, name: str, config: str | None) -> WebServer:
    extra: dict[str, str] = {}
    if config is not None:
        path = b.workdir / f"replicas-{name}.toml"
        path.write_text(config)
        extra["IX_CONFIG"] = str(path)
    return await b.stack.start_server(f"server-{name}", b.server.processes, **extra)


async def _run(b: Bench, server: WebServer, connections: int, replica: list[int], runs: Runs) -> None:
    """One wrk run on `server`, with the commands Redis ran and the replica's CPU over it."""
    await b.redis.config_resetstat()
    before = cpu_seconds(replica)
    result = await b.wrk(server, BODY, connections, b.plan.acks_seconds)
    runs.replica_cpu += cpu_seconds(replica) - before
    runs.commands += await command_calls(b.redis)
    runs.requests += result.requests
    runs.seconds += result.seconds
    runs.errors += result.errors
    runs.server_cpu += result.server_cpu_ms * result.requests / 1000
    runs.redis_cpu += result.redis_cpu_ms * result.requests / 1000
    runs.p50s.append(result.p50_ms)
    runs.p99s.append(result.p99_ms)


async def _level(b: Bench, servers: dict[str, WebServer], connections: int, replica: list[int]) -> Any:
    """Both servers taking turns at one concurrency; acks=1 as ratios of acks=0."""
    runs = {name: Runs() for name in servers}
    for index in range(b.plan.acks_rounds):
        order = list(servers) if index % 2 == 0 else list(reversed(servers))
        for name in order:
            await _run(b, servers[name], connections, replica, runs[name])
    off, on = runs["acks0"].figures(), runs["acks1"].figures()
    return {
        "acks0": off,
        "acks1": on,
        "p50_ratio": ratio(on["p50_ms"], off["p50_ms"]),
        "p99_ratio": ratio(on["p99_ms"], off["p99_ms"]),
        "rps_ratio": ratio(on["rps"], off["rps"]),
        "commands_ratio": ratio(on["redis_commands_per_request"], off["redis_commands_per_request"]),
        "commands_added": _added(off["redis_commands"], on["redis_commands"]),
    }


def _added(off: dict[str, float], on: dict[str, float]) -> dict[str, float]:
    """The commands per request acks=1 sends beyond acks=0's (the WAIT, the replica's ACKs): those that
    differ by a tenth or more, so that the idle workers' few do not show."""
    names = sorted(set(off) | set(on), key=lambda name: -(on.get(name, 0.0) - off.get(name, 0.0)))
    added = {name: round(on.get(name, 0.0) - off.get(name, 0.0), 2) for name in names}
    return {name: n for name, n in added.items() if abs(n) >= 0.1}


async def stop_servers(b: Bench, servers: list[Child], *others: Child) -> None:
    """The servers by a SIGTERM to each launcher first, as many.py does: granian's web process, which a
    SIGTERM to the whole group also reaches, was left in its signal handler until the SIGKILL 15 s later
    (in the first run of this scenario too); then the others (the replica)."""
    for child in servers:
        if (launcher := child.proc) is not None and launcher.poll() is None:
            launcher.send_signal(signal.SIGTERM)
    for child in servers:
        if (launcher := child.proc) is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                await asyncio.to_thread(launcher.wait, 15)
    await asyncio.to_thread(b.stack.stop_children, [*servers, *others])


async def replica_acks_cost(b: Bench) -> dict[str, Any]:
    # the replica in sync before the servers start: an acks=1 server whose first writes (its reaper's) find
    # no replica stops waiting for replicas for a few seconds (store/replica_acks.py), which would flatter it
    replica, sync_seconds = await _replica(b)
    started = await asyncio.gather(*(_server(b, name, config) for name, config in SERVERS.items()))
    servers = dict(zip(SERVERS, started, strict=True))
    try:
        # warm up: pools, scripts, caches (a new server's first seconds cost more per request)
        for server in servers.values():
            await b.wrk(server, BODY, 16, 1)
        levels = {f"c{c}": await _level(b, servers, c, replica.pids()) for c in CONNECTIONS}
        warnings = servers["acks1"].child.log().count(UNACKNOWLEDGED)
    finally:
        await stop_servers(b, [server.child for server in servers.values()], replica)
    return {
        "rounds": b.plan.acks_rounds,
        "seconds_per_run": b.plan.acks_seconds,
        "web_processes": b.server.processes,
        "replica_sync_seconds": round(sync_seconds, 2),
        "unacknowledged_warnings": warnings,
        "load_average": _load_average(),
        "by_concurrency": levels,
    }
