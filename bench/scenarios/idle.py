"""Scenario 9, what idle workers cost: with 1, 10 and 50 idle `python -m workers` processes on the bench's
Redis, the Redis commands each sends and the CPU each burns over a window, then background pickup with all
of them running.

The stack's own worker(s) count among the idle workers; the scenario starts the rest, waits for each one's
"worker ready" and a settle period, and stops them at the end. The workers run on the server's defaults
(config/server.toml: the bench passes no IX_CONFIG): each idle one waits for a queued job's token (a blocking
pop of 2 s at most, server/worker_host.py) and reads the queue after 15 empty waits. How commands are
attributed to each worker is in bench/redis_watch.py.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

from ..procs import Child, cpu_seconds
from ..redis_watch import Monitor, command_calls, redis_ports
from .background import pickups
from .common import Bench


def _per_worker(feed_counts: Counter[int], ports: dict[int, int], workers: list[Child]) -> dict[int, int]:
    """{worker pid: MONITOR lines of its connections}; every worker is listed, silent ones with 0."""
    counts = {worker.pid: 0 for worker in workers}
    for port, count in feed_counts.items():
        pid = ports.get(port)
        if pid in counts:
            counts[pid] += count
    return counts


async def window(b: Bench, workers: list[Child], seconds: float) -> dict[str, Any]:
    """Redis commands and CPU of the idle workers over `seconds`."""
    port = b.stack.redis.port
    assert port is not None
    pids = {worker.pid: worker.pids() for worker in workers}
    every_pid = [pid for own in pids.values() for pid in own]
    ports = redis_ports(every_pid, port)
    async with Monitor("127.0.0.1", port) as monitor:
        await b.redis.config_resetstat()
        cpu_before = {pid: cpu_seconds(own) for pid, own in pids.items()}
        started = time.monotonic()
        await asyncio.sleep(seconds)
        calls = await command_calls(b.redis)
        cpu = {pid: cpu_seconds(own) - cpu_before[pid] for pid, own in pids.items()}
        wall = time.monotonic() - started
        # a connection opened during the window is found now
        ports.update(redis_ports(every_pid, port))
    feed = monitor.feed
    direct = _per_worker(feed.direct, ports, workers)
    scripted = _per_worker(feed.scripted, ports, workers)
    names: Counter[str] = Counter()
    for port_of_worker in {p for p, pid in ports.items() if pid in pids}:
        names.update(feed.names.get(port_of_worker, Counter()))
    n = len(workers)
    total = {pid: direct[pid] + scripted[pid] for pid in pids}
    return {
        "workers": n,
        "seconds": round(wall, 2),
        "commands_per_s_per_worker": round(sum(total.values()) / n / wall, 3),
        "client_commands_per_s_per_worker": round(sum(direct.values()) / n / wall, 3),
        "script_commands_per_s_per_worker": round(sum(scripted.values()) / n / wall, 3),
        "max_worker_commands_per_s": round(max(total.values()) / wall, 3),
        "cpu_percent_per_worker": round(sum(cpu.values()) / n / wall * 100, 3),
        "max_worker_cpu_percent": round(max(cpu.values()) / wall * 100, 3),
        "worker_commands_per_s": {k: round(v / n / wall, 3) for k, v in names.most_common()},
        "commandstats_per_s": round(sum(calls.values()) / wall, 2),
        "commandstats_by_command_per_s": {k: round(v / wall, 3) for k, v in calls.most_common()},
        "monitor_per_s": round((sum(feed.direct.values()) + sum(feed.scripted.values())) / wall, 2),
    }


async def _pickups(b: Bench, workers: list[Child], prefix: str) -> dict[str, Any]:
    """Scenario 3's pickups with these workers running, and what each pickup cost Redis and the workers
    together: a job wakes one worker, so this grows with their number only by their idle traffic over the
    pickups' few seconds, which it holds too."""
    pids = [pid for worker in workers for pid in worker.pids()]
    await b.redis.config_resetstat()
    cpu_before = cpu_seconds(pids)
    result = await pickups(b, b.plan.idle_pickup_samples, prefix)
    calls = await command_calls(b.redis)
    done = max(1, result["create_to_claim"]["n"])
    result["redis_commands_per_pickup"] = round(sum(calls.values()) / done, 1)
    result["workers_cpu_ms_per_pickup"] = round((cpu_seconds(pids) - cpu_before) * 1000 / done, 2)
    return result


async def idle_workers(b: Bench) -> dict[str, Any]:
    plan = b.plan
    own = [child for child in b.stack.children if child.name.startswith("worker-")]
    extra: list[Child] = []
    rows: dict[str, Any] = {}
    try:
        for count in plan.idle_workers:
            missing = count - len(own) - len(extra)
            started = time.monotonic()
            if missing > 0:
                names = [f"idle-{len(extra) + i}" for i in range(missing)]
                extra += await b.stack.start_workers(names, within=120.0)
            ready = time.monotonic() - started
            await asyncio.sleep(plan.idle_settle_seconds)
            workers = own + extra
            row = await window(b, workers, plan.idle_window_seconds)
            row["start_seconds"] = round(ready, 2)
            row["pickup"] = await _pickups(b, workers, f"idle{len(workers)}-")
            rows[str(len(workers))] = row
    finally:
        await asyncio.to_thread(b.stack.stop_children, extra)
    return {
        "settle_seconds": plan.idle_settle_seconds,
        "window_seconds": plan.idle_window_seconds,
        "by_workers": rows,
    }
