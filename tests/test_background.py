"""Background interactions in worker processes: polling, cancel, races, lost workers, graceful shutdown."""

from __future__ import annotations

import asyncio
import json
import random
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from google import genai
from google.genai._interactions import BadRequestError, NotFoundError
from google.genai.interactions import Interaction

from .replies import id_of, interaction, steps_of, usage_of
from .sse import events, text_of
from .support import Stack, new_key, running_stack, sdk, tenant_keys, tenant_of
from .waiting import until, until_async

#: the lifecycle, cancel and streaming tests on the shared stack run on every way the README starts it
EVERY_TOPOLOGY = True

LONG = " ".join(f"w{i}" for i in range(200))  # 10 s of echo-slow


def test_poll_until_completed(beta: genai.Client) -> None:
    reply = interaction(
        beta.interactions.create(model="echo-slow", input="one two three four five", background=True)
    )
    assert reply.status == "in_progress"
    seen: set[str] = {reply.status}

    def finished() -> Interaction | None:
        got = beta.interactions.get(id_of(reply))
        seen.add(got.status)
        return got if got.status == "completed" else None

    done = until(finished, timeout=10)
    assert "in_progress" in seen
    assert done.output_text == "one two three four five"
    assert [s.type for s in steps_of(done)] == ["user_input", "model_output"]
    assert usage_of(done).total_output_tokens == 5


def test_cancel_keeps_the_partial_output(beta: genai.Client, http: httpx.Client) -> None:
    interaction_id = id_of(
        interaction(beta.interactions.create(model="echo-slow", input=LONG, background=True))
    )
    until(lambda: beta.interactions.get(interaction_id).status == "in_progress")
    # let some words come out (50 ms each)
    with http.stream("GET", f"/v1beta/interactions/{interaction_id}", params={"stream": "true"}) as response:
        for event in events(response):
            if event["event_type"] == "step.delta" and event["delta"]["text"].startswith("w5"):
                break
    cancelled = beta.interactions.cancel(interaction_id)
    assert cancelled.status == "cancelled"
    text = cancelled.output_text
    assert text is not None
    assert LONG.startswith(text) and len(text.split()) >= 6
    assert usage_of(cancelled).total_output_tokens == len(text.split())
    # it stays that way, and the event log agrees with the record
    again = beta.interactions.get(interaction_id)
    assert again.status == "cancelled" and again.output_text == text
    with http.stream("GET", f"/v1beta/interactions/{interaction_id}", params={"stream": "true"}) as response:
        replay = list(events(response))
    assert replay[-1]["event_type"] == "interaction.completed"
    assert replay[-1]["interaction"]["status"] == "cancelled"
    assert text_of(replay) == text
    # cancelling again returns it unchanged
    assert beta.interactions.cancel(interaction_id).output_text == text


def test_delete_of_a_running_interaction_cancels_it(beta: genai.Client, http: httpx.Client) -> None:
    interaction_id = id_of(
        interaction(beta.interactions.create(model="echo-slow", input=LONG, background=True))
    )
    until(lambda: beta.interactions.get(interaction_id).status == "in_progress")
    beta.interactions.delete(interaction_id)
    with pytest.raises(NotFoundError):
        beta.interactions.get(interaction_id)


async def test_deleted_running_interaction_leaves_nothing_behind(
    base_url: str, api_key: str, tenant: str, redis: aioredis.Redis
) -> None:
    client = sdk(base_url, api_key)
    interaction_id = id_of(
        interaction(await client.aio.interactions.create(model="echo-slow", input=LONG, background=True))
    )
    await until_async(lambda: _status_is(client, interaction_id, "in_progress"))
    await client.aio.interactions.delete(interaction_id)
    await asyncio.sleep(1.0)  # the stopped run writes nothing after the delete
    assert await tenant_keys(redis, tenant) == []
    assert await redis.zscore("ix:running", f"{tenant}/{interaction_id}") is None


async def _status_is(client: genai.Client, interaction_id: str, status: str) -> bool:
    return (await client.aio.interactions.get(interaction_id)).status == status


async def test_cancel_against_completion_has_one_winner(
    base_url: str, api_key: str, tenant: str, redis: aioredis.Redis
) -> None:
    """At least 200 races; whoever wins, the record and its event log say the same. Half the runs are
    three words (150 ms), which a cancel sent after up to 350 ms mostly loses; half are twelve (600 ms),
    which it mostly wins, even on a loaded machine whose cancels take a few hundred milliseconds (with
    three words only, such a machine once saw no cancel win at all)."""
    client = sdk(base_url, api_key)
    outcomes: dict[str, int] = {}
    rng = random.Random(7)

    async def race(words: int) -> None:
        text = " ".join("abcdefghijkl"[:words])
        interaction_id = id_of(
            interaction(await client.aio.interactions.create(model="echo-slow", input=text, background=True))
        )
        await asyncio.sleep(rng.uniform(0, 0.35))
        try:
            final = await client.aio.interactions.cancel(interaction_id)
            assert final.status == "cancelled"
        except BadRequestError as exc:
            assert "completed" in str(exc)
        record = await client.aio.interactions.get(interaction_id)
        outcomes[record.status] = outcomes.get(record.status, 0) + 1
        log = await redis.xrange(f"ix:{{{tenant}}}:{interaction_id}:ev")
        frames = [fields[b"e"] for _id, fields in log]
        terminal = [f for f in frames if f.startswith((b"event: interaction.completed", b"event: error"))]
        assert len(terminal) == 1
        assert f'"status":"{record.status}"'.encode() in terminal[0]
        # the output the record keeps is exactly what the log streamed
        streamed = text_of([json.loads(f.split(b"data: ", 1)[1]) for f in frames])
        assert (record.output_text or "") == streamed
        if record.status == "completed":
            assert record.output_text == text
        else:
            assert text.startswith(streamed)

    semaphore = asyncio.Semaphore(20)

    async def bounded(words: int) -> None:
        async with semaphore:
            await race(words)

    await asyncio.gather(*(bounded(3 if n % 2 else 12) for n in range(200)))
    assert sum(outcomes.values()) == 200
    assert set(outcomes) == {"completed", "cancelled"}, outcomes


def test_idempotency_key_returns_the_same_interaction(base_url: str, api_key: str) -> None:
    headers = {"x-goog-api-key": api_key, "Idempotency-Key": "order-42"}
    body = {"model": "echo-slow", "input": "one two", "background": True}
    with httpx.Client(base_url=base_url, headers=headers, timeout=30) as http:
        first = http.post("/v1beta/interactions", json=body).json()
        second = http.post("/v1beta/interactions", json=body).json()
        assert second["id"] == first["id"]
        other = http.post("/v1beta/interactions", json={**body, "input": "something else"})
        assert other.status_code == 400
        assert "Idempotency-Key" in other.json()["error"]["message"]
        done = until(lambda: _completed(http, first["id"]))
        assert done["steps"][-1]["content"][0]["text"] == "one two"


def _completed(http: httpx.Client, interaction_id: str) -> dict[str, Any] | None:
    got = http.get(f"/v1beta/interactions/{interaction_id}", params={"stream": "false"}).json()
    return got if got["status"] == "completed" else None


# -- lost and stopped workers -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def crash_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A stack of its own, whose workers the tests start, kill and stop."""
    with running_stack(
        Path(tmp_path_factory.mktemp("crash")), config={"runner": {"max_attempts": 2}}
    ) as stack:
        yield stack


@pytest.fixture
def crash(crash_stack: Stack) -> Iterator[Stack]:
    """The crash stack, with every worker a test started stopped after it."""
    try:
        yield crash_stack
    finally:
        crash_stack.stop_workers()


def _status(http: httpx.Client, interaction_id: str, status: str) -> dict[str, Any] | None:
    got = http.get(f"/v1beta/interactions/{interaction_id}", params={"stream": "false"}).json()
    return got if got["status"] == status else None


async def test_a_job_delivered_twice_runs_once(crash: Stack) -> None:
    """arq delivers at least once: a job whose interaction is finished, or was handed to a newer job,
    returns at once."""
    url = crash.servers[0][1]
    key = new_key()
    tenant = tenant_of(key)
    client = sdk(url, key)
    crash.start_worker()
    interaction_id = id_of(
        interaction(await client.aio.interactions.create(model="echo", input="only once", background=True))
    )
    await until_async(lambda: _status_is(client, interaction_id, "completed"))
    redis = aioredis.Redis.from_url(crash.redis_url)
    try:
        from arq.connections import ArqRedis

        from server.store.jobs import job_serializer

        arq = ArqRedis(connection_pool=redis.connection_pool, job_serializer=job_serializer)
        await arq.enqueue_job(
            "run_interaction", tenant, interaction_id, 0, _queue_name="ix:queue", _job_id="again"
        )
        await asyncio.sleep(1.0)
        attempts = await redis.hget(f"ix:{{{tenant}}}:{interaction_id}", "attempts")
        assert attempts == b"1"
        log = await redis.xrange(f"ix:{{{tenant}}}:{interaction_id}:ev")
        assert sum(1 for _id, f in log if f[b"e"].startswith(b"event: interaction.completed")) == 1
    finally:
        await redis.aclose()


def test_a_foreground_run_whose_web_process_dies_is_failed(crash: Stack) -> None:
    key = new_key()
    doomed_url = crash.start_server()
    doomed = crash.servers[-1][0]
    survivor = crash.servers[0][1]
    try:
        with httpx.Client(base_url=doomed_url, headers={"x-goog-api-key": key}, timeout=30) as http:
            body = {"model": "echo-slow", "input": LONG, "stream": True}
            with http.stream("POST", "/v1beta/interactions", json=body) as response:
                reader = events(response)  # held: a dropped reader would close the connection
                first = next(reader)
                interaction_id = first["interaction"]["id"]
                doomed.signal(signal.SIGKILL)
        with httpx.Client(base_url=survivor, headers={"x-goog-api-key": key}, timeout=30) as http:
            failed = until(lambda: _status(http, interaction_id, "failed"), timeout=20)
        assert failed["errors"][0]["code"] == "worker_lost"
        assert "server" in failed["errors"][0]["message"]
    finally:
        doomed.stop()
        crash.servers.pop()


async def test_a_job_lost_before_any_worker_took_it_is_queued_again(crash: Stack) -> None:
    url = crash.servers[0][1]
    key = new_key()
    tenant = tenant_of(key)
    client = sdk(url, key)
    interaction_id = id_of(
        interaction(await client.aio.interactions.create(model="echo", input="not lost", background=True))
    )
    redis = aioredis.Redis.from_url(crash.redis_url)
    try:
        # no worker runs yet: take its job out of arq's queue, as a failed enqueue or a lost Redis write would
        job = f"{tenant}/{interaction_id}/0"
        assert await redis.delete(f"arq:job:{job}") == 1
        await redis.zrem("ix:queue", job)
        crash.start_worker()
        await until_async(lambda: _status_is(client, interaction_id, "completed"), within=15)
    finally:
        await redis.aclose()


async def test_two_cancels_at_once_both_see_the_saved_output(base_url: str, api_key: str) -> None:
    client = sdk(base_url, api_key)
    interaction_id = id_of(
        interaction(await client.aio.interactions.create(model="echo-slow", input=LONG, background=True))
    )
    await until_async(lambda: _status_is(client, interaction_id, "in_progress"))
    await asyncio.sleep(0.4)
    first, second = await asyncio.gather(
        client.aio.interactions.cancel(interaction_id), client.aio.interactions.cancel(interaction_id)
    )
    assert first.status == second.status == "cancelled"
    assert first.output_text and first.output_text == second.output_text
