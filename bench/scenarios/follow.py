"""Scenario 19 (issue 28): what following a remote background run costs a worker, per minute of run.

The front is the stack's own server and workers; its route `bench-agent-*` (the bench's models.toml) is an
`interactions` route to the **back**, a second server of ours (`python -m server` and a `python -m workers`
of its own, on a Redis of its own, so that the front's Redis counts only the front's commands) whose agent
`slow-researcher` is `echo-slow` at `[echo] slow_word_delay_ms` of the plan (200 ms: five events a second,
a brisk agent). `remote_runs` background agent turns are created on the front at once; for each, a worker
creates its remote run on the back (`background: true, stream: true`), records its id and follows its event
stream into the front's log.

Once every run's remote id is in its record (and `remote_settle_seconds` more), a window of
`remote_window_seconds` is measured in which every run is still followed (each input outlasts it): the CPU
of the front's workers and web process (/proc), the front's Redis counters (INFO stats, commandstats and
cpu deltas, redis_watch.counters) and the events the runs' logs grew by (XLEN, read outside the window).
Its idle twin, a window as long with nothing running (measured while the back starts), is taken off. Per
minute of run: the net figures over runs x window minutes. Then every run must complete with its input as
its answer; over their whole lives (create to end, the bench's own reads taken off) the same figures per
run say what a run costs beyond its minutes (its remote create, its id's write, its end).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from server.launch.redis_process import RedisProcess, free_port
from server.store import keys
from server.store.commands import typed

from ..client import Connection
from ..procs import BACK_KEY, Child, cpu_seconds
from ..redis_watch import Counters, counters
from .common import API_KEY, CREATE, HEADERS, Bench, json_object, payload

#: the back's agent the front's `bench-agent-*` agents are (the bench's models.toml names it)
BACK_AGENT = "slow-researcher"
AGENT = "bench-agent-research"
#: how much longer than the window each run's input lasts
_SLACK_SECONDS = 4.0
_TENANT = hashlib.sha256(API_KEY.encode()).hexdigest()[:32]
#: a run's record status while it runs (the lifecycle's states that are not ends)
_RUNNING = frozenset({b"queued", b"in_progress", b"cancelling"})


@dataclass(frozen=True)
class Reading:
    """The front's CPU (workers, web process, Redis) and Redis counters at one moment."""

    at: float
    worker_cpu: float
    web_cpu: float
    redis_cpu: float
    redis: Counters


async def _reading(b: Bench, workers: list[Child]) -> Reading:
    cpu = await b.redis.info("cpu")
    worker_pids = [pid for worker in workers for pid in worker.pids()]
    return Reading(
        time.monotonic(),
        cpu_seconds(worker_pids),
        cpu_seconds(b.server.pids()),
        float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]),
        await counters(b.redis),
    )


def _net(load: tuple[Reading, Reading], idle: tuple[Reading, Reading], own: Counter[str]) -> dict[str, Any]:
    """What the load window cost beyond its idle twin's rate over as long, the bench's own commands
    (`own`) taken off: CPU seconds and Redis counters."""
    (a, z), (i, j) = load, idle
    wall = z.at - a.at
    scale = wall / (j.at - i.at)
    busy, calm = z.redis - a.redis, j.redis - i.redis
    calls = Counter({name: n - calm.calls.get(name, 0) * scale - own[name] for name, n in busy.calls.items()})
    reads = busy.stats["total_reads_processed"] - calm.stats["total_reads_processed"] * scale
    return {
        "seconds": wall,
        "worker_cpu": z.worker_cpu - a.worker_cpu - (j.worker_cpu - i.worker_cpu) * scale,
        "web_cpu": z.web_cpu - a.web_cpu - (j.web_cpu - i.web_cpu) * scale,
        "redis_cpu": z.redis_cpu - a.redis_cpu - (j.redis_cpu - i.redis_cpu) * scale,
        "commands": sum(calls.values()),
        "reads": reads - sum(own.values()),
        "calls": calls,
    }


class Back:
    """The front's Google: a Redis, a worker and a server of ours (one web process), echo-slow's pace set."""

    def __init__(self, b: Bench) -> None:
        self.b = b
        self.redis = RedisProcess(b.workdir / "redis-back", port=free_port(), appendonly=False)
        self.children: list[Child] = []

    async def start(self) -> None:
        b = self.b
        await asyncio.to_thread(self.redis.start)
        config = b.workdir / "back.toml"
        config.write_text(f"[echo]\nslow_word_delay_ms = {b.plan.remote_word_delay_ms}\n")
        env = b.stack.env(REDIS_URL=self.redis.url, IX_CONFIG=str(config))
        # not named worker-*: the scenarios find the stack's own workers by that name
        worker = Child("back-worker", [sys.executable, "-m", "workers"], env, b.workdir / "back-worker.log")
        b.stack.children.append(worker.start())
        self.children.append(worker)
        await worker.wait_for_line("worker ready", 60.0)
        server = await b.stack.start_server(
            "back", 1, PORT=str(b.stack.back_port), REDIS_URL=self.redis.url, IX_CONFIG=str(config)
        )
        self.children.append(server.child)
        headers = {"x-goog-api-key": BACK_KEY, "content-type": "application/json"}
        async with Connection(server.url, headers) as conn:
            made = await conn.request(
                "POST", "/v1beta/agents", payload(id=BACK_AGENT, base_agent="echo-slow")
            )
        if made.status != 200:
            raise RuntimeError(f"the back's agent was not made: {made.status} {made.body[:300]!r}")

    async def stop(self) -> None:
        await asyncio.to_thread(self.b.stack.stop_children, self.children)
        await asyncio.to_thread(self.redis.stop)


async def _idle(b: Bench, workers: list[Child]) -> tuple[Reading, Reading]:
    first = await _reading(b, workers)
    await asyncio.sleep(b.plan.remote_window_seconds)
    return first, await _reading(b, workers)


async def _create(b: Bench, text: str) -> list[str]:
    body = payload(agent=AGENT, input=text, background=True)
    ids = []
    async with Connection(b.server.url, HEADERS) as conn:
        for _ in range(b.plan.remote_runs):
            answer = await conn.request("POST", CREATE, body)
            if answer.status != 200:
                raise RuntimeError(f"an agent create answered {answer.status}: {answer.body[:300]!r}")
            ids.append(str(json_object(answer.body)["id"]))
    return ids


async def _fields(b: Bench, ids: list[str], field: str, own: Counter[str]) -> list[bytes | None]:
    own["hget"] += len(ids)
    redis = typed(b.redis)
    return [await redis.hget(keys.interaction(_TENANT, i), field) for i in ids]


async def _wait(
    b: Bench,
    ids: list[str],
    field: str,
    ready: Callable[[bytes | None], bool],
    within: float,
    own: Counter[str],
) -> None:
    """Until every run's record `field` is `ready`, read every 100 ms (the reads counted in `own`)."""
    deadline = time.monotonic() + within
    waiting = list(ids)
    while waiting:
        values = await _fields(b, waiting, field, own)
        waiting = [i for i, value in zip(waiting, values, strict=True) if not ready(value)]
        if waiting and time.monotonic() > deadline:
            raise RuntimeError(
                f"{len(waiting)} of {len(ids)} remote runs: their {field} was not ready in time"
            )
        await asyncio.sleep(0.1)


async def _events(b: Bench, ids: list[str], own: Counter[str]) -> int:
    own["xlen"] += len(ids)
    return sum([await b.redis.xlen(keys.events(_TENANT, i)) for i in ids])


async def _errors(b: Bench, ids: list[str], text: str) -> Counter[str]:
    """Each run as the front shows it: completed, its answer its input (echo-slow's)."""
    errors: Counter[str] = Counter()
    async with Connection(b.server.url, HEADERS) as conn:
        for interaction_id in ids:
            got = json_object((await conn.request("GET", f"{CREATE}/{interaction_id}")).body)
            if got.get("status") != "completed":
                errors[f"status {got.get('status')}"] += 1
            elif text not in str(got.get("steps") or got.get("outputs")):
                errors["another answer"] += 1
    return errors


def _per_minute(net: dict[str, Any], runs: int, events: int) -> dict[str, Any]:
    """The window's net figures per minute of a followed run, and per remote event."""
    minutes = runs * net["seconds"] / 60
    per_event = max(1, events)
    return {
        "run_minutes": round(minutes, 3),
        "events": events,
        "events_per_run_minute": round(events / minutes, 1),
        "worker_cpu_s_per_run_minute": round(net["worker_cpu"] / minutes, 4),
        "worker_cpu_percent_per_run": round(net["worker_cpu"] / minutes / 60 * 100, 3),
        # + 0.0: a zero rounded from below is not shown as -0.0
        "web_cpu_s_per_run_minute": round(net["web_cpu"] / minutes, 4) + 0.0,
        "redis_cpu_s_per_run_minute": round(net["redis_cpu"] / minutes, 4),
        "redis_commands_per_run_minute": round(net["commands"] / minutes, 1),
        "redis_reads_per_run_minute": round(net["reads"] / minutes, 1),
        "redis_commands_per_event": round(net["commands"] / per_event, 3),
        "worker_cpu_us_per_event": round(net["worker_cpu"] * 1e6 / per_event, 1),
        "by_command_per_run_minute": {
            name: round(n / minutes, 1) for name, n in net["calls"].most_common() if n / minutes >= 0.5
        },
    }


def _per_run(net: dict[str, Any], runs: int) -> dict[str, Any]:
    """A run's whole life, create to end: what it cost in all."""
    return {
        "seconds": round(net["seconds"], 2),
        "worker_cpu_ms_per_run": round(net["worker_cpu"] * 1000 / runs, 2),
        "web_cpu_ms_per_run": round(net["web_cpu"] * 1000 / runs, 2),
        "redis_cpu_ms_per_run": round(net["redis_cpu"] * 1000 / runs, 2),
        "redis_commands_per_run": round(net["commands"] / runs, 1),
    }


async def _runs(b: Bench, workers: list[Child], own: Counter[str]) -> dict[str, Any]:
    """The runs, from their create to their end: the window's readings and the lives' (`own` counts the
    bench's own commands meanwhile: its reads of the records and logs, and 3 INFOs a reading)."""
    plan = b.plan
    lasts = plan.remote_settle_seconds + plan.remote_window_seconds + _SLACK_SECONDS
    words = math.ceil(lasts * 1000 / plan.remote_word_delay_ms)
    text = " ".join(f"w{n}" for n in range(words))
    born = await _reading(b, workers)
    ids = await _create(b, text)
    await _wait(b, ids, keys.Field.REMOTE, lambda value: value is not None, 30.0, own)
    following = time.monotonic() - born.at
    await asyncio.sleep(plan.remote_settle_seconds)
    logged = await _events(b, ids, own)
    start = await _reading(b, workers)
    await asyncio.sleep(plan.remote_window_seconds)
    end = await _reading(b, workers)
    own["info"] += 6
    events = await _events(b, ids, own) - logged
    statuses = await _fields(b, ids, keys.Field.STATUS, own)
    await _wait(b, ids, keys.Field.STATUS, lambda value: value not in _RUNNING, lasts + 60, own)
    died = await _reading(b, workers)
    return {
        "ids": ids,
        "text": text,
        "words": words,
        "window": (start, end),
        "life": (born, died),
        "events": events,
        "running_at_window_end": sum(status in _RUNNING for status in statuses),
        "all_following_seconds": round(following, 2),
    }


async def remote_follow(b: Bench) -> dict[str, Any]:
    plan = b.plan
    workers = [child for child in b.stack.children if child.name.startswith("worker-")]
    back = Back(b)
    own: Counter[str] = Counter()
    try:
        # the front idles while the back starts: the back's CPU and Redis are not the front's
        idle, _ = await asyncio.gather(_idle(b, workers), back.start())
        runs = await _runs(b, workers, own)
        errors = await _errors(b, runs["ids"], runs["text"])
    finally:
        await back.stop()
    n = plan.remote_runs
    window = _net(runs["window"], idle, Counter())
    return {
        "runs": n,
        "word_delay_ms": plan.remote_word_delay_ms,
        "words": runs["words"],
        "window_seconds": round(window["seconds"], 2),
        "workers": len(workers),
        "all_following_seconds": runs["all_following_seconds"],
        "running_at_window_end": runs["running_at_window_end"],
        "errors": dict(errors),
        "per_run_minute": _per_minute(window, n, runs["events"]),
        "life": _per_run(_net(runs["life"], idle, own), n),
        "idle": _idle_figures(idle),
    }


def _idle_figures(idle: tuple[Reading, Reading]) -> dict[str, Any]:
    """The idle twin as it was: what the front spends with no run to follow."""
    first, last = idle
    return {
        "seconds": round(last.at - first.at, 2),
        "worker_cpu_s": round(last.worker_cpu - first.worker_cpu, 3),
        "redis_commands": (last.redis - first.redis).commands,
    }
