"""Scenario 16 (issue 25), webhook retries on time under steady traffic: how late each retry starts after
the time the server gave it.

A server and a worker of the scenario's own (a queue of their own, loopback receivers allowed, retries 1-2 s
after a failure, the worker's waits as shipped: `poll_delay_ms` 2000). Two tenants on them:

- the **traffic**: background echo creates, one every 50 ms for as long as the scenario runs, each ending in
  a webhook event that a receiver answering 200 gets (so a run job, an event job and a delivery job each:
  the steady stream of jobs whose tokens keep a worker's waits from ever coming back empty);
- the **failing events**: foreground echo creates, one every 50 ms, whose webhook's receiver answers 500 to
  each event's first attempt (a `webhook-id` it has not seen) and 200 to the next: each event is retried
  once.

Each retry's lateness is its attempt's `result.time` less the `next_attempt_at` of the attempt before it,
both from the webhook's deliveries (GET .../webhooks/{id}/deliveries, both stamped by the worker's clock).
A retry not made within 20 s of the last failing create is missing, an error of the report.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import sys
import time
from datetime import datetime
from typing import Any

from tests.fakes.http import FakeServer, RecordedRequest, Script
from tests.waiting import until_async

from ..client import Connection
from ..procs import Child, WebServer
from ..stats import distribution
from .common import CREATE, Bench, json_object, payload

#: the server and worker of this scenario read this (and only they do)
CONFIG = (
    '[webhooks]\nallow = ["127.0.0.0/8"]\nbackoff_initial_seconds = 1.0\nbackoff_max_seconds = 2.0\n'
    "retry_for_seconds = 60.0\ndeliveries_kept = 1000\n\n"
    '[worker]\nqueue_name = "ix:bench-retries"\n'
)
#: failing events (a quick run: a quarter), and the pause between two creates of each tenant
EVENTS = 200
PAUSE_SECONDS = 0.05
WAIT_SECONDS = 20.0


class FirstFails(FakeServer):
    """A receiver answering 500 to the first attempt of each event (by `webhook-id`), 200 after."""

    def __init__(self) -> None:
        super().__init__(Script(status=200, body=b"{}"))
        self.seen: set[str] = set()
        self.delivered = 0

    async def _read_request(self, reader: asyncio.StreamReader) -> RecordedRequest | None:
        request = await super()._read_request(reader)
        if request is not None:
            event = request.headers.get("webhook-id", "")
            if event in self.seen:
                self.delivered += 1
            else:
                self.seen.add(event)
                # the script the server answers this request with: it takes the next one queued
                self.scripts.appendleft(Script(status=500, body=b"down"))
        return request


async def _start(b: Bench) -> tuple[Child, WebServer]:
    path = b.workdir / "retries.toml"
    path.write_text(CONFIG)
    keys = base64.b64encode(os.urandom(32)).decode()
    env = b.stack.env(IX_CONFIG=str(path), IX_WEBHOOK_KEYS=keys)
    worker = Child("worker-retries", [sys.executable, "-m", "workers"], env, b.workdir / "worker-retries.log")
    b.stack.children.append(worker.start())
    await worker.wait_for_line("worker ready", 30.0)
    server = await b.stack.start_server("server-retries", 1, IX_CONFIG=str(path), IX_WEBHOOK_KEYS=keys)
    return worker, server


async def _webhook(conn: Connection, uri: str) -> str:
    body = payload(uri=uri, subscribed_events=["interaction.completed"])
    response = await conn.request("POST", "/v1beta/webhooks", body)
    if response.status != 200:
        raise RuntimeError(f"webhook create answered {response.status}: {response.body[:300]!r}")
    return str(json_object(response.body)["id"])


async def _traffic(server: WebServer, uri: str, stop: asyncio.Event) -> int:
    """Background creates of a tenant of their own, one every PAUSE_SECONDS until `stop`."""
    created = 0
    headers = {"x-goog-api-key": "bench-retries-traffic", "content-type": "application/json"}
    async with Connection(server.url, headers) as conn:
        await _webhook(conn, uri)
        while not stop.is_set():
            body = payload(model="echo", input=f"busy {created}", background=True)
            if (await conn.request("POST", CREATE, body)).status == 200:
                created += 1
            await asyncio.sleep(PAUSE_SECONDS)
    return created


async def _failing(conn: Connection, receiver: FirstFails, events: int) -> int:
    """`events` foreground creates whose webhook's first attempts fail; returns how many were created."""
    created = 0
    for n in range(events):
        if (await conn.request("POST", CREATE, payload(model="echo", input=f"event {n}"))).status == 200:
            created += 1
        await asyncio.sleep(PAUSE_SECONDS)

    async def all_delivered() -> bool:
        return receiver.delivered >= created

    with contextlib.suppress(TimeoutError):
        await until_async(all_delivered, within=WAIT_SECONDS, interval=0.1)
    return created


def lateness(attempts: list[dict[str, Any]]) -> tuple[list[float], int]:
    """Each retry's start after its due time (s), and how many retries were never made."""
    by_attempt = {(a["event_id"], a["attempt"]): a for a in attempts}
    late, missing = [], 0
    for a in attempts:
        if a["outcome"] != "retry":
            continue
        retried = by_attempt.get((a["event_id"], a["attempt"] + 1))
        if retried is None:
            missing += 1
            continue
        due = datetime.fromisoformat(a["next_attempt_at"])
        late.append((datetime.fromisoformat(retried["result"]["time"]) - due).total_seconds())
    return late, missing


async def webhook_retries(b: Bench) -> dict[str, Any]:
    failing, ok = FirstFails(), FakeServer(Script(status=200, body=b"{}"))
    await failing.start()
    await ok.start()
    children: list[Child] = []
    events = EVENTS // 4 if b.plan.quick else EVENTS
    headers = {"x-goog-api-key": "bench-retries", "content-type": "application/json"}
    try:
        worker, server = await _start(b)
        children += [worker, server.child]
        stop = asyncio.Event()
        async with Connection(server.url, headers) as conn:
            webhook_id = await _webhook(conn, failing.base_url + "/hook")
            traffic = asyncio.create_task(_traffic(server, ok.base_url + "/hook", stop))
            await asyncio.sleep(2.0)  # the stream of other jobs flows first
            began = time.monotonic()
            created = await _failing(conn, failing, events)
            seconds = time.monotonic() - began
            stop.set()
            busy = await traffic
            response = await conn.request("GET", f"/v1beta/webhooks/{webhook_id}/deliveries")
    finally:
        children += [c for c in b.stack.children if c.name.endswith("-retries") and c not in children]
        await asyncio.to_thread(b.stack.stop_children, children)
        await failing.stop()
        await ok.stop()
    late, missing = lateness(json_object(response.body)["deliveries"])
    result: dict[str, Any] = {
        "failing_events": created,
        "traffic_creates": busy,
        "traffic_creates_per_s": round(busy / (seconds + 2.0), 1),
        "retries": len(late),
        "missing": missing,
        "early": sum(1 for each in late if each < 0),
        "lateness": distribution(late),
    }
    if missing or len(late) < created:
        result["error"] = f"{created - len(late)} of {created} retries not made within {WAIT_SECONDS:g} s"
    return result
