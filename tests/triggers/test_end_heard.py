"""A trigger's execution hears its interaction's end (the end job, store/scripts/_notify.lua): it is settled
in Redis soon after the interaction ends, with nothing reading the trigger or its executions (each test
reads the stored records through the store, which settles nothing); the failure limit moves a trigger to
`error` the same way; an interaction that ends before its fire recorded it on the execution is recorded
by its end. In-process: the runtime's use cases and a worker host in this process, on a real Redis."""

from __future__ import annotations

from server.protocol import status as st
from server.runner.replies import Reply
from server.runtime import Runtime
from server.store.commands import now_ms
from server.store.triggers import ExecutionRecord, TriggerRecord, marker
from server.triggers import template
from server.triggers.firing import scheduled_id
from server.triggers.wire import CreateTrigger
from server.worker_host import WorkerHost

from ..waiting import until_async

TENANT = "t-ends"
#: a schedule none of whose times comes within a test: only a run now makes an execution
YEARLY = "0 9 1 1 *"


async def made(runtime: Runtime, interaction: dict[str, object], limit: int | None = None) -> TriggerRecord:
    body = CreateTrigger(
        interaction=interaction, schedule=YEARLY, time_zone="UTC", max_consecutive_failures=limit
    )
    trigger_id = (await runtime.triggers.create(TENANT, body)).id
    record = await runtime.store.triggers.get(TENANT, trigger_id)
    assert record is not None
    return record


async def stored(runtime: Runtime, trigger_id: str, execution_id: str) -> ExecutionRecord | None:
    """The execution as Redis holds it, once no longer in progress (the store's read settles nothing)."""
    found = await runtime.store.triggers.execution(TENANT, trigger_id, execution_id)
    return found if found is not None and found.status != "in_progress" else None


async def test_an_execution_ends_with_its_interaction_unread(runtime: Runtime, worker: WorkerHost) -> None:
    record = await made(runtime, {"agent": "echo", "input": "hello"})
    trigger_id = record.config.id
    started = await runtime.firing.run_now(TENANT, record)
    assert started.status == "in_progress" and started.ix is not None
    ended = await until_async(lambda: stored(runtime, trigger_id, started.id), within=10)
    assert (ended.status, ended.ix, ended.error) == ("completed", started.ix, None)
    assert ended.end is not None and ended.start is not None and ended.end >= ended.start
    assert await runtime.store.interactions.status(TENANT, started.ix) == st.COMPLETED
    after = await runtime.store.triggers.get(TENANT, trigger_id)
    assert after is not None
    assert (after.running, after.fails, after.previous_interaction_id) == (None, 0, started.ix)


async def test_the_failure_limit_moves_a_trigger_to_error_unread(
    runtime: Runtime, worker: WorkerHost
) -> None:
    words = " ".join(["slow"] * 200)
    record = await made(runtime, {"agent": "echo-slow", "input": words}, limit=1)
    trigger_id = record.config.id
    started = await runtime.firing.run_now(TENANT, record)
    assert started.ix is not None

    async def running() -> bool:
        return await runtime.store.interactions.status(TENANT, started.ix or "") == st.IN_PROGRESS

    await until_async(running, within=10)
    await runtime.control.cancel(TENANT, started.ix)

    async def errored() -> TriggerRecord | None:
        found = await runtime.store.triggers.get(TENANT, trigger_id)
        return found if found is not None and found.status == "error" else None

    trigger = await until_async(errored, within=10)
    assert (trigger.fails, trigger.running) == (1, None)
    ended = await stored(runtime, trigger_id, started.id)
    assert ended is not None and ended.status == "failed"
    assert ended.error == "its interaction ended cancelled"


async def test_an_interaction_that_ends_before_its_fire_records_it_is_recorded_by_its_end(
    runtime: Runtime, worker: WorkerHost
) -> None:
    """The fire records the interaction on its execution (trigger_started.lua) after creating it; a quick
    run can end first, and its end records it (and the trigger's last interaction) as it settles."""
    record = await made(runtime, {"agent": "echo", "input": "quick"})
    trigger_id = record.config.id
    now = now_ms()
    outcome = await runtime.store.triggers.fire(
        TENANT, trigger_id, now, now, manual=True, execution_id=scheduled_id(now), run=True, kept=10
    )
    execution = outcome.execution
    assert outcome.what == "fired" and execution is not None and execution.ix is None
    # the fire's create, and no more of it: it was not recorded on the execution
    request, steps, warnings = template.decoded(template.body_of({"agent": "echo", "input": "quick"}, None))
    made_by = marker(trigger_id, execution.id)
    reply = await runtime.creator.create(TENANT, request, steps, warnings, execution=made_by)
    assert isinstance(reply, Reply) and reply.interaction.id is not None
    interaction_id = reply.interaction.id
    ended = await until_async(lambda: stored(runtime, trigger_id, execution.id), within=10)
    assert (ended.status, ended.ix) == ("completed", interaction_id)
    after = await runtime.store.triggers.get(TENANT, trigger_id)
    assert after is not None and after.previous_interaction_id == interaction_id and after.running is None
    # the fire's record of it, late, changes nothing
    assert not await runtime.store.triggers.started(TENANT, trigger_id, execution.id, interaction_id)
