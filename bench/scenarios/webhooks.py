"""Scenario 11 (issue 14), webhook delivery: from an interaction's end to its receiver's request, beside the
same receiver hit directly by the bench.

The receiver is the tests' FakeServer (tests/fakes/http.py) in this process, answering 200 and closing each
connection, as a cold receiver does; it records the moment (time.monotonic()) each request has been read.
One tenant, one webhook subscribed to `interaction.completed`. Creators (1, then 16 at once) each send stored
foreground echo creates one after the other, each after the webhook of the one before (one event in flight
per creator), a bounded count within a time limit. A foreground create is answered once its
interaction has ended, so the moment its answer arrived here is an upper bound on the end, and "end →
webhook received" (both on this process's monotonic clock) is what the server adds after the answer, at
least. Each webhook is matched to its interaction by `data.id`; one not received within `WAIT_SECONDS`
is missing, an error of the report.

The baseline, in the same run: the same receiver POSTed directly by this process, as the server's worker
does (a fresh httpx client per POST, no pool), at the same concurrency, one POST per event, each of the
same size (a received webhook's headers and body, its id replaced by one of the same length). Its figure is
from the start of the POST to the receiver's reading it; the ratio of the two is what a noisy machine moves
least.

Beside each level: the worker's CPU time per delivered event (/proc, its process over the level) and the
Redis commands per event (INFO commandstats: every client's, the create's own and scripts' included). A third
level, `burst`, has one creator create back to back without waiting for its webhooks: with every event
queued at once, it reads how many the worker delivers a second.

The loopback receiver needs `[webhooks] allow = ["127.0.0.0/8"]`: the scenario starts a server and a worker
of its own with that IX_CONFIG, and a queue of their own, so that the stack's workers (which refuse loopback
URIs) never take its jobs and nothing the other scenarios measure changes. The worker serves its metrics on
a port of its own (`[metrics] worker_port`): the server's `ix_webhook_event_delivery_seconds` is read from
there, before and after each level.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
import time
from typing import Any

from server.launch.redis_process import free_port
from tests.fakes.http import RecordedRequest

from ..client import Connection
from ..procs import Child, WebServer, cpu_seconds
from ..redis_watch import command_calls
from ..stats import distribution, ratio
from .common import CREATE, Bench, json_object, payload
from .webhook_receiver import Receiver, direct_post, histogram, summary

API_KEY = "bench-webhooks"
HEADERS = {"x-goog-api-key": API_KEY, "content-type": "application/json"}
#: the server and worker of this scenario read this (and only they do)
CONFIG = '[webhooks]\nallow = ["127.0.0.0/8"]\n\n[worker]\nqueue_name = "ix:bench-webhooks"\n'
#: each level: concurrent creators, creates each (a quick run does a quarter), and whether a creator waits
#: for its webhook before its next create (one event in flight each) or creates back to back (a burst)
LEVELS: dict[str, tuple[int, int, bool]] = {
    "c1": (1, 100, True),
    "c16": (16, 16, True),
    "burst": (1, 100, False),
}
#: no level creates for longer than this; how long a webhook may take before it counts as missing
LEVEL_SECONDS = 12.0
WAIT_SECONDS = 5.0
WARMUP = 10


async def _start(b: Bench) -> tuple[Child, WebServer, int]:
    """This scenario's worker (first: a server is ready once a worker consumes its queue), then server."""
    path = b.workdir / "webhooks.toml"
    path.write_text(CONFIG)
    keys = base64.b64encode(os.urandom(32)).decode()
    metrics_port = free_port()
    env = b.stack.env(IX_CONFIG=str(path), IX_WEBHOOK_KEYS=keys, METRICS_WORKER_PORT=str(metrics_port))
    log = b.workdir / "worker-webhooks.log"
    worker = Child("worker-webhooks", [sys.executable, "-m", "workers"], env, log).start()
    b.stack.children.append(worker)
    await worker.wait_for_line("worker ready", 30.0)
    server = await b.stack.start_server("server-webhooks", 1, IX_CONFIG=str(path), IX_WEBHOOK_KEYS=keys)
    return worker, server, metrics_port


async def _create_webhook(server: WebServer, uri: str) -> str:
    body = payload(uri=uri, subscribed_events=["interaction.completed"])
    async with Connection(server.url, HEADERS) as conn:
        response = await conn.request("POST", "/v1beta/webhooks", body)
    if response.status != 200:
        raise RuntimeError(f"webhook create answered {response.status}: {response.body[:300]!r}")
    return str(json_object(response.body)["id"])


class Level:
    """What one level's creators saw: per interaction, the moment its answer arrived, and the delay from
    then to its webhook's arrival (None: not received within WAIT_SECONDS)."""

    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver
        self.answered: dict[str, float] = {}
        self.delays: dict[str, float | None] = {}
        self.errors = 0

    async def received(self, key: str, deadline: float) -> None:
        request = await self.receiver.wait_for(key, max(0.0, deadline - time.monotonic()))
        self.delays[key] = None if request is None else request.received_at - self.answered[key]


async def _creator(server: WebServer, level: Level, count: int, wait: bool) -> None:
    """`count` foreground echo creates one after the other (until LEVEL_SECONDS), each followed by the
    wait for its webhook when `wait` (one event in flight per creator)."""
    until = time.monotonic() + LEVEL_SECONDS
    mine: list[str] = []
    async with Connection(server.url, HEADERS) as conn:
        for _ in range(count):
            if time.monotonic() > until:
                break
            response = await conn.request("POST", CREATE, payload(model="echo", input="hi"))
            at = time.monotonic()
            if response.status != 200:
                level.errors += 1
                continue
            key = str(json_object(response.body)["id"])
            level.answered[key] = at
            mine.append(key)
            if wait:
                await level.received(key, at + WAIT_SECONDS)
    if not wait:
        deadline = time.monotonic() + WAIT_SECONDS
        for key in mine:
            await level.received(key, deadline)


async def _webhook_level(
    b: Bench, server: WebServer, receiver: Receiver, worker: Child, spec: tuple[int, int, bool]
) -> dict[str, Any]:
    """One level's creators; end (answer received) → webhook received, per interaction."""
    c, each, wait = spec
    level = Level(receiver)
    await b.redis.config_resetstat()
    cpu, started = cpu_seconds(worker.pids()), time.monotonic()
    await asyncio.gather(*(_creator(server, level, each, wait) for _ in range(c)))
    cpu = cpu_seconds(worker.pids()) - cpu
    commands = sum((await command_calls(b.redis)).values())
    delays = [d for d in level.delays.values() if d is not None]
    missing = sorted(key for key, d in level.delays.items() if d is None)
    last = receiver.last_at(list(level.answered), started)
    return {
        "creators": c,
        "waits_for_its_webhook": wait,
        "created": len(level.answered),
        "create_errors": level.errors,
        "delivered": len(delays),
        "delivered_per_s": round(len(delays) / (last - started), 1) if last > started else None,
        "worker_cpu_ms_per_event": round(cpu * 1000 / len(delays), 2) if delays else None,
        "redis_commands_per_event": round(commands / len(delays), 1) if delays else None,
        "missing": len(missing),
        "missing_ids": missing[:5],
        "end_to_received": distribution(delays),
        "received_before_answer": sum(1 for d in delays if d < 0),
    }


async def _baseline_level(receiver: Receiver, sample: RecordedRequest, c: int, n: int) -> dict[str, Any]:
    """`n` direct POSTs over `c` tasks, each the size of `sample` (its id replaced by one as long)."""
    old_id = str(sample.json()["data"]["id"])
    keep = ("content-type", "webhook-id", "webhook-timestamp", "webhook-signature", "user-agent")
    headers = {k: v for k, v in sample.headers.items() if k in keep}
    prefix = f"direct-c{c}-"
    tokens = [f"{prefix}{index:0{len(old_id) - len(prefix)}d}" for index in range(n)]
    started: dict[str, float] = {}

    async def task() -> None:
        while tokens:
            token = tokens.pop()
            body = sample.body.replace(old_id.encode(), token.encode())
            started[token] = await direct_post(receiver.uri, headers, body)

    await asyncio.gather(*(task() for _ in range(c)))
    delays = [receiver.found[t].received_at - at for t, at in started.items() if t in receiver.found]
    return {"posts": n, "start_to_received": distribution(delays), "missing": n - len(delays)}


async def _levels(
    b: Bench, server: WebServer, receiver: Receiver, worker: Child, metrics_port: int
) -> dict[str, Any]:
    """Each level: the webhooks, the server's histogram over them, then as many direct POSTs."""
    metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    rows: dict[str, Any] = {}
    for name, (c, each, wait) in LEVELS.items():
        count = max(1, each // 4) if b.plan.quick else each
        before = await histogram(metrics_url)
        row = await _webhook_level(b, server, receiver, worker, (c, count, wait))
        await asyncio.sleep(1.5)  # the worker flushes its metrics about once a second
        row["server_histogram"] = summary(before, await histogram(metrics_url))
        if row["delivered"] and wait:
            sample = receiver.server.requests[-1]
            row["baseline"] = await _baseline_level(receiver, sample, c, row["delivered"])
            ours, base = row["end_to_received"], row["baseline"]["start_to_received"]
            row["p50_vs_baseline"] = ratio(ours["p50_ms"], base["p50_ms"])
            row["p99_vs_baseline"] = ratio(ours["p99_ms"], base["p99_ms"])
        rows[name] = row
    return rows


async def webhook_delivery(b: Bench) -> dict[str, Any]:
    receiver = Receiver()
    await receiver.server.start()
    children: list[Child] = []
    try:
        worker, server, metrics_port = await _start(b)
        children += [worker, server.child]
        webhook_id = await _create_webhook(server, receiver.uri)
        # warm up: the first deliveries import and build what the later ones reuse
        warm = await _webhook_level(b, server, receiver, worker, (1, WARMUP, True))
        rows = await _levels(b, server, receiver, worker, metrics_port)
    finally:
        children += [c for c in b.stack.children if c.name.endswith("-webhooks") and c not in children]
        await asyncio.to_thread(b.stack.stop_children, children)
        await receiver.server.stop()
    result: dict[str, Any] = {
        "webhook_id": webhook_id,
        "wait_seconds": WAIT_SECONDS,
        "warmup": warm["end_to_received"],
        "duplicates": receiver.duplicates,
        "by_level": rows,
    }
    missing = sum(row["missing"] for row in rows.values())
    if missing:
        result["error"] = f"{missing} webhook(s) not received within {WAIT_SECONDS:g} s of their create"
    return result
