"""Webhook retries on time, on the stacks users start (`make run`, and a web process with a separate
worker process), the worker's waits as shipped (`poll_delay_ms` 2000): a receiver on loopback answers
500 to the first attempts and 200 after, and every retry's attempt starts within a second of the time the
server gave it (`next_attempt_at` in the attempt before it, GET .../deliveries), idle and while another
tenant's background creates and their webhook events stream in (whose tokens keep a worker's waits from
ever coming back empty: a retry waited for a read of the queue after 15 empty ones, and never came)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from google import genai

from tests.fakes.http import Script
from tests.support import Stack, new_key, sdk, stacks_by_topology

from .receivers import Receiver
from .test_pipeline import _deliveries, _webhook

#: retries within a second or so, so that the test is short; loopback receivers allowed
CONFIG: dict[str, dict[str, Any]] = {
    "webhooks": {
        "allow": ["127.0.0.0/8"],
        "backoff_initial_seconds": 0.5,
        "backoff_max_seconds": 1.0,
        "retry_for_seconds": 20.0,
        "attempt_timeout_seconds": 2.0,
    },
}
#: how late an attempt may start after its due time (s); early is never right
LATE_SECONDS = 1.0
EVENTS = 4


@pytest.fixture(scope="module")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Stack]]:
    with stacks_by_topology(
        tmp_path_factory, "retries", ["make-run", "tcp-workers"], config=CONFIG
    ) as started:
        yield started


@pytest.fixture(params=["make-run", "tcp-workers"])
def stack(request: pytest.FixtureRequest, stacks: dict[str, Stack]) -> Stack:
    return stacks[request.param]


async def traffic(stack: Stack, stop: asyncio.Event) -> int:
    """Another tenant's background creates, one every 100 ms until `stop` (300 at most), each ending in
    a webhook event delivered to a receiver of its own: a steady stream of jobs. Returns how many."""
    client = sdk(stack.url, new_key())
    created = 0
    async with Receiver() as receiver:
        await _webhook(client, receiver.uri, ["interaction.completed"])
        while not stop.is_set() and created < 300:
            await client.aio.interactions.create(model="echo", input=f"busy {created}", background=True)
            created += 1
            await asyncio.sleep(0.1)
        await receiver.wait_for(created, within=20)
    return created


async def failing_first(stack: Stack, client: genai.Client, receiver: Receiver) -> str:
    """EVENTS interactions ending 0.2 s apart, their webhook's first EVENTS attempts answered 500: every
    event is retried at least once. Returns the webhook's id, once every event was delivered."""
    receiver.server.add(*[Script(status=500, body=b"down")] * EVENTS)
    webhook_id, _ = await _webhook(client, receiver.uri, ["interaction.completed"])
    for n in range(EVENTS):
        await client.aio.interactions.create(model="echo", input=f"event {n}", background=True)
        await asyncio.sleep(0.2)
    await receiver.wait_for(2 * EVENTS, within=20)
    return webhook_id


def lateness(attempts: list[dict[str, Any]]) -> list[float]:
    """Each retry's start after its due time (s): attempt n's `next_attempt_at`, attempt n+1's time."""
    by_attempt = {(a["event_id"], a["attempt"]): a for a in attempts}
    late = []
    for a in attempts:
        if a["outcome"] == "retry":
            due = datetime.fromisoformat(a["next_attempt_at"])
            started = datetime.fromisoformat(by_attempt[(a["event_id"], a["attempt"] + 1)]["result"]["time"])
            late.append((started - due).total_seconds())
    return late


async def check_on_time(stack: Stack, *, busy: bool) -> None:
    key = new_key()
    client = sdk(stack.url, key)
    stop = asyncio.Event()
    streaming = asyncio.create_task(traffic(stack, stop)) if busy else None
    try:
        if streaming is not None:
            await asyncio.sleep(1.0)  # the stream of other jobs flows first
        async with Receiver() as receiver:
            webhook_id = await failing_first(stack, client, receiver)
    finally:
        stop.set()
        created = await streaming if streaming is not None else 0
    attempts = await _deliveries(stack, key, webhook_id)
    assert [a["outcome"] for a in attempts].count("retry") == EVENTS
    late = lateness(attempts)
    assert len(late) == EVENTS
    assert all(-0.002 <= each <= LATE_SECONDS for each in late), late
    if busy:
        assert created >= 10  # the retries came while other jobs streamed in, one every 100 ms


async def test_every_retry_runs_on_time_under_steady_traffic(stack: Stack) -> None:
    await check_on_time(stack, busy=True)


async def test_every_retry_runs_on_time_when_idle(stack: Stack) -> None:
    await check_on_time(stack, busy=False)
