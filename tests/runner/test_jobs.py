"""Background jobs in-process: a worker (server/worker_host.py) in this process takes the job from arq's
queue on the test Redis and runs it against the scripted upstream; its shutdown is the test's to call.

A worker that stops while its run has made no output hands the run back to the queue (its attempt
refunded) and another worker runs it afresh; one that stops after output ends it as failed, keeping what
its followers saw (a re-run would show them a second answer).
"""

from __future__ import annotations

import asyncio

from server.protocol import status as st
from server.runner import assemble
from server.runner.run import WORKER_STOPPED
from server.runtime import Runtime
from server.worker_host import WorkerHost

from .harness import Frames, ScriptedBackend, reply_of, steps_text

TENANT = "tenant-jobs"
BACKGROUND = {"model": "scripted", "input": "hi", "background": True}


async def follow(runtime: Runtime, interaction_id: str) -> Frames:
    return Frames(runtime.events.frames(await runtime.events.prepare(TENANT, interaction_id, None)))


async def test_a_worker_stopped_before_any_output_hands_its_run_back(
    runtime: Runtime, scripted: ScriptedBackend, worker: WorkerHost
) -> None:
    interaction_id = (await reply_of(runtime, TENANT, BACKGROUND)).interaction.id
    assert interaction_id
    first = await scripted.next_call()  # the upstream has the request and has said nothing yet
    claimed = await runtime.store.runs.state(TENANT, interaction_id)
    assert claimed.status == st.IN_PROGRESS and claimed.attempts == 1

    await worker.stop(grace=0.1)

    await asyncio.wait_for(first.closed.wait(), 5)
    handed_back = await runtime.store.runs.state(TENANT, interaction_id)
    assert handed_back.fence == claimed.fence + 1
    assert handed_back.attempts == 0  # refunded: the worker gave the run up, the run did not fail
    assert await runtime.store.jobs.waiting(TENANT, interaction_id, handed_back.fence)
    assert not assemble.has_output(await runtime.store.log.frames(TENANT, interaction_id))

    # another worker runs it from the start; its followers see one answer
    follower = await follow(runtime, interaction_id)
    second_worker = WorkerHost(runtime)
    await second_worker.start()
    try:
        second = await scripted.next_call()
        second.text("the ", "answer")
        second.finish()
        events = await follower.rest()
    finally:
        await second_worker.stop(grace=1.0)
    record = await runtime.control.get(TENANT, interaction_id)
    assert record.status == st.COMPLETED
    assert record.output is not None and steps_text(record.output.steps) == "the answer" == follower.text()
    assert sum(1 for e in events if e["event_type"] == "step.start") == 1
    assert len(scripted.calls) == 2


async def test_a_worker_stopped_after_output_fails_the_run_with_that_output(
    runtime: Runtime, scripted: ScriptedBackend, worker: WorkerHost
) -> None:
    interaction_id = (await reply_of(runtime, TENANT, BACKGROUND)).interaction.id
    assert interaction_id
    follower = await follow(runtime, interaction_id)
    call = await scripted.next_call()
    call.text("part ", "of ")
    await follower.until("step.delta", 2)

    await worker.stop(grace=0.1)

    events = await follower.rest()
    record = await runtime.control.get(TENANT, interaction_id)
    assert record.status == st.FAILED
    assert record.output is not None and record.output.errors is not None
    assert [(e.code, e.message) for e in record.output.errors] == [("worker_stopped", WORKER_STOPPED)]
    assert steps_text(record.output.steps) == "part of " == follower.text()
    assert events[-1]["event_type"] == "error" and events[-1]["error"]["code"] == "worker_stopped"
    # not queued again: nobody runs it a second time
    state = await runtime.store.runs.state(TENANT, interaction_id)
    assert not await runtime.store.jobs.waiting(TENANT, interaction_id, state.fence)
    assert len(scripted.calls) == 1
