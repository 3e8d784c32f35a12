"""Runs in the store, in-process against a real Redis: every status change goes by the lifecycle table,
and a refused one is a typed exception, never a string. Each test runs twice: with the keys every tenant
shares on the records' Redis (together), and on another one (apart: REDIS_QUEUE_URL, as with a Cluster),
where the store changes them in commands of their own (store/queue_side.py)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable
from typing import cast

import pytest
from redis.asyncio import Redis

from server import settings as settings_module
from server.errors import AttemptsExhausted, Fenced, NotFound, StaleJob, StatusChanged
from server.launch.redis_process import RedisProcess
from server.protocol import lifecycle
from server.protocol import status as st
from server.protocol.interaction import InteractionConfig
from server.protocol.lifecycle import Event
from server.protocol.records import Output, StoredConfig
from server.store import keys
from server.store.jobs import event_job
from server.store.new_records import NewRecord
from server.store.runs import Finished, RunBatch
from server.store.store import Store

TENANT = "t1"


@pytest.fixture(params=["together", "apart"])
async def store(private_redis: RedisProcess, request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    env = {"REDIS_URL": private_redis.url}
    if request.param == "apart":
        # the same redis-server, another database: nothing of one is seen in the other
        env["REDIS_QUEUE_URL"] = private_redis.url.removesuffix("/0") + "/1"
    opened = await Store.open(settings_module.load(env))
    for client in (opened.redis, opened.queue.redis):
        await client.flushdb()  # this session's own Redis: used by nothing else now
    try:
        yield opened
    finally:
        await opened.close()


async def running(store: Store) -> dict[str, float]:
    """The running set, where it lives (none on the records' Redis when apart)."""
    if not store.queue.together:
        assert not await store.redis.exists(keys.RUNNING)
    found = await store.queue.redis.zrange(keys.RUNNING, 0, -1, withscores=True)
    return {member.decode(): score for member, score in found}


def record(status: str, *, background: bool = False) -> NewRecord:
    return NewRecord(
        status=status,
        created="2026-11-30T00:00:00Z",
        background=background,
        logged=True,
        config=StoredConfig(config=InteractionConfig(model="echo")),
        input_steps=[],
    )


async def queued(store: Store, interaction_id: str) -> None:
    await store.interactions.create(
        TENANT, interaction_id, record(st.QUEUED, background=True), previous_interaction_id=None, walk=False
    )


async def test_claim_moves_a_queued_interaction_and_refuses_a_stale_job(store: Store) -> None:
    await queued(store, "a")
    claim = await store.runs.claim(TENANT, "a", 0)
    assert claim.fence == 1 and claim.seq == 0
    assert await store.interactions.status(TENANT, "a") == st.IN_PROGRESS
    with pytest.raises(StaleJob):
        await store.runs.claim(TENANT, "a", 0)
    with pytest.raises(NotFound):
        await store.runs.claim(TENANT, "nope", 0)


async def test_claims_past_the_attempts_are_refused(store: Store) -> None:
    await queued(store, "a")
    fence = 0
    for _ in range(store.runs.max_attempts):
        fence = (await store.runs.claim(TENANT, "a", fence)).fence
    with pytest.raises(AttemptsExhausted):
        await store.runs.claim(TENANT, "a", fence)


async def test_cancel_then_the_run_saves_its_output_and_acknowledges(store: Store) -> None:
    await queued(store, "a")
    claim = await store.runs.claim(TENANT, "a", 0)
    assert await store.runs.cancel(TENANT, "a", "now") == st.IN_PROGRESS
    assert await store.interactions.status(TENANT, "a") == lifecycle.CANCELLING
    # the record shows clients `cancelled`, but a chain cannot continue from it yet
    with pytest.raises(StatusChanged) as refused:
        await store.runs.cancel(TENANT, "a", "now")
    assert refused.value.current == lifecycle.CANCELLING
    # the run's write is refused, and so is its completion: the cancel won
    [conflict] = await store.runs.append([RunBatch(TENANT, "a", claim.fence, [(1, b"x")])])
    assert isinstance(conflict, StatusChanged) and conflict.current == lifecycle.CANCELLING
    with pytest.raises(StatusChanged):
        await finish(store, "a", Event.COMPLETE, claim.fence)
    done = await finish(store, "a", Event.SAVE_CANCELLED, claim.fence)
    assert done.status == st.CANCELLED
    assert await store.runs.wait_cancel_ack(TENANT, "a", 1.0)
    # the acknowledgement stays for any other cancel waiting on it
    assert await store.runs.wait_cancel_ack(TENANT, "a", 1.0)


async def test_a_late_runner_is_fenced(store: Store) -> None:
    await queued(store, "a")
    first = await store.runs.claim(TENANT, "a", 0)
    fence = await store.runs.requeue(TENANT, "a", first.fence, 1000, refund=False)
    [conflict] = await store.runs.append([RunBatch(TENANT, "a", first.fence, [])])
    assert isinstance(conflict, Fenced)
    with pytest.raises(Fenced):
        await finish(store, "a", Event.COMPLETE, first.fence)
    second = await store.runs.claim(TENANT, "a", fence)
    assert (await finish(store, "a", Event.COMPLETE, second.fence)).status == st.COMPLETED
    # finished: nothing moves it again
    with pytest.raises(StatusChanged):
        await store.runs.cancel(TENANT, "a", "now")
    with pytest.raises(StatusChanged):
        await store.runs.requeue(TENANT, "a", second.fence, 1000, refund=False)


async def test_an_administrative_settle_takes_the_fence(store: Store) -> None:
    await queued(store, "a")
    claim = await store.runs.claim(TENANT, "a", 0)
    done = await store.runs.finish(
        TENANT, "a", event=Event.LOSE, fence=None, output=Output(), updated="now", events=[]
    )
    assert done.status == st.FAILED
    with pytest.raises(Fenced):
        await finish(store, "a", Event.COMPLETE, claim.fence)


async def finish(store: Store, interaction_id: str, event: Event, fence: int) -> Finished:
    return await store.runs.finish(
        TENANT, interaction_id, event=event, fence=fence, output=Output(), updated="now", events=[]
    )


async def test_the_running_set_follows_a_run_from_queued_to_its_end(store: Store) -> None:
    await store.interactions.create(
        TENANT,
        "a",
        record(st.QUEUED, background=True),
        previous_interaction_id=None,
        walk=False,
        pickup_deadline=123,
    )
    assert await running(store) == {"t1/a": 123}
    claim = await store.runs.claim(TENANT, "a", 0)
    leased = (await running(store))["t1/a"]
    assert leased > 123
    [written] = await store.runs.append([RunBatch(TENANT, "a", claim.fence, [(1, b"x")])])
    assert written is None and (await running(store))["t1/a"] >= leased
    await finish(store, "a", Event.COMPLETE, claim.fence)
    assert await running(store) == {}
    # a refused create is not watched
    with pytest.raises(NotFound):
        await store.interactions.create(
            TENANT,
            "b",
            record(st.QUEUED, background=True),
            previous_interaction_id="gone",
            walk=False,
            pickup_deadline=123,
        )
    assert await running(store) == {}


async def test_an_end_a_webhook_listens_for_queues_its_job_on_the_queues_redis(store: Store) -> None:
    await cast("Awaitable[int]", store.redis.sadd(keys.webhooks_enabled(TENANT), "wh_1"))
    await queued(store, "a")
    claim = await store.runs.claim(TENANT, "a", 0)
    await finish(store, "a", Event.COMPLETE, claim.fence)
    job = keys.event_job_id(TENANT, "a")
    assert await store.queue.redis.exists(keys.arq_job(job))
    assert await store.queue.redis.zscore(store.jobs.queue_name, job) is not None
    if not store.queue.together:
        assert not await store.redis.exists(keys.arq_job(job))
        # a crash between the settle and the queueing leaves the run watched: the reaper queues it again
        await store.queue.redis.delete(keys.arq_job(job))
        await store.queue.watch("t1/a", 0)
        await store.runs.forget_ended(TENANT, "a", st.COMPLETED)
        assert await store.queue.redis.exists(keys.arq_job(job)) and await running(store) == {}
    # an interaction stored already ended queues its job too, and is not left watched
    await store.interactions.create(
        TENANT, "c", record(st.COMPLETED), previous_interaction_id=None, walk=False
    )
    assert await store.queue.redis.exists(keys.arq_job(keys.event_job_id(TENANT, "c")))
    assert await running(store) == {}
    # no webhook: no job
    await store.redis.delete(keys.webhooks_enabled(TENANT))
    await queued(store, "b")
    claim = await store.runs.claim(TENANT, "b", 0)
    await finish(store, "b", Event.COMPLETE, claim.fence)
    assert not await store.queue.redis.exists(keys.arq_job(keys.event_job_id(TENANT, "b")))
    assert event_job(store.jobs.queue_name, TENANT, "b").keys[0] == keys.webhooks_enabled(TENANT)


async def test_a_cancel_and_a_delete_reach_the_runs_through_the_queues_redis(store: Store) -> None:
    listener = Redis.from_url(store.settings.redis_queue_url or store.settings.redis_url or "")
    pubsub = listener.pubsub()
    await pubsub.subscribe(keys.CANCEL_CHANNEL)
    try:
        await queued(store, "a")
        await store.runs.claim(TENANT, "a", 0)
        await store.runs.cancel(TENANT, "a", "now")
        await queued(store, "b")
        await store.runs.claim(TENANT, "b", 0)
        assert await store.interactions.delete(TENANT, "b", "never") == 1
        heard: list[bytes] = []
        deadline = time.monotonic() + 5
        while len(heard) < 2 and time.monotonic() < deadline:
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=0.5)
            if message is not None:
                heard.append(message["data"])
        assert heard == [b"t1/a", b"t1/b"]
        assert set(await running(store)) == {"t1/a"}
    finally:
        await pubsub.aclose()
        await listener.aclose()
