"""Runs in the store, in-process against a real Redis: every status change goes by the lifecycle table,
and a refused one is a typed exception, never a string."""

from __future__ import annotations

import pytest

from server.errors import AttemptsExhausted, Fenced, NotFound, StaleJob, StatusChanged
from server.protocol import lifecycle
from server.protocol import status as st
from server.protocol.interaction import InteractionConfig
from server.protocol.lifecycle import Event
from server.protocol.records import Output, StoredConfig
from server.store.interactions import NewRecord
from server.store.runs import Finished, RunBatch
from server.store.store import Store

TENANT = "t1"


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
