"""A scheduled time's fire against a real Redis, with the time set where a test needs it (no waits):
times missed while nothing ran are recorded `skipped`, never run in a burst; a fire run again after its
worker died finishes the first run's work and makes no second execution nor interaction; a fire job for a
time that is not the trigger's next does nothing; a trigger whose job was lost has it queued again by a
read, and by the sweep when nobody reads it. The runtime's own use cases (no server, no worker)."""

from __future__ import annotations

from typing import Any, cast

from server.runtime import Runtime
from server.store import keys
from server.store.commands import now_ms
from server.store.keys import TriggerField
from server.triggers.firing import MISSED, scheduled_id
from server.triggers.schedule import Schedule
from server.triggers.wire import CreateTrigger, UpdateTrigger

TENANT = "t-fires"
MINUTELY = "* * * * *"


async def made(runtime: Runtime, schedule: str = MINUTELY) -> str:
    body = CreateTrigger(
        interaction={"agent": "echo", "input": "hi"}, schedule=schedule, time_zone="Europe/Paris"
    )
    return (await runtime.triggers.create(TENANT, body)).id


async def set_next(runtime: Runtime, trigger_id: str, next_ms: int) -> None:
    await cast(Any, runtime.store.redis).hset(
        keys.trigger(TENANT, trigger_id), TriggerField.NEXT, str(next_ms)
    )


async def queued(runtime: Runtime, trigger_id: str, scheduled_ms: int) -> bool:
    job = keys.trigger_fire_job_id(TENANT, trigger_id, scheduled_ms)
    return bool(await runtime.store.queue.redis.exists(keys.arq_job(job)))


async def test_times_missed_while_nothing_ran_are_skipped(runtime: Runtime) -> None:
    trigger_id = await made(runtime)
    schedule = Schedule(MINUTELY, "Europe/Paris")
    now = now_ms()
    # the trigger's next time was 5 minutes ago: no worker ran since
    first = schedule.next_after(now - 5 * 60_000 - 60_000)
    await set_next(runtime, trigger_id, first)
    await runtime.firing.fire(TENANT, trigger_id, first)
    grace = runtime.settings.triggers.missed_after_seconds * 1000
    done = await runtime.store.triggers.executions(TENANT, trigger_id, None, 100)
    missed = [t for t in schedule.times(first - 1, now, 100) if now_ms() - t > grace]
    assert [each.id for each in done] == [scheduled_id(t) for t in missed]
    assert {each.status for each in done} == {"skipped"} and {each.error for each in done} == {MISSED}
    assert all(each.ix is None for each in done)
    record = await runtime.store.triggers.get(TENANT, trigger_id)
    assert record is not None and record.next_ms is not None and record.last_run_ms is None
    # its next time is the first not missed: one within the grace (run at once, alone), or one to come
    assert record.next_ms > missed[-1] and record.next_ms >= now - grace
    assert await queued(runtime, trigger_id, record.next_ms)


async def test_a_fire_run_again_makes_one_execution_and_one_interaction(runtime: Runtime) -> None:
    trigger_id = await made(runtime)
    now = now_ms()
    at = now - now % 1000
    await set_next(runtime, trigger_id, at)
    # the first run died after its script (the time taken, `next` moved on) and before anything else
    outcome = await runtime.store.triggers.fire(
        TENANT, trigger_id, now, at, execution_id=scheduled_id(at), run=True, next_ms=at + 60_000, kept=10
    )
    assert outcome.what == "fired" and outcome.execution is not None and outcome.execution.ix is None
    # the job is taken again: it creates the interaction, and queues the next time's job
    await runtime.firing.fire(TENANT, trigger_id, at)
    execution = await runtime.store.triggers.execution(TENANT, trigger_id, scheduled_id(at))
    assert execution is not None and execution.status == "in_progress" and execution.ix is not None
    assert await queued(runtime, trigger_id, at + 60_000)
    # and again: the same interaction (its Idempotency-Key is the execution's), nothing new
    # (as if the interaction's id had not been recorded)
    await cast(Any, runtime.store.redis).hset(
        keys.trigger_executions(TENANT, trigger_id), execution.id, execution_json(execution.id, at, now)
    )
    await runtime.firing.fire(TENANT, trigger_id, at)
    again = await runtime.store.triggers.execution(TENANT, trigger_id, scheduled_id(at))
    assert again is not None and again.ix == execution.ix
    assert len(await runtime.store.triggers.executions(TENANT, trigger_id, None, 10)) == 1


def execution_json(execution_id: str, at: int, start: int) -> str:
    """An execution in progress whose interaction is not recorded (as a fire killed mid-create leaves it)."""
    return f'{{"id":"{execution_id}","scheduled":{at},"status":"in_progress","start":{start}}}'


async def test_a_job_for_a_time_that_is_not_next_does_nothing(runtime: Runtime) -> None:
    trigger_id = await made(runtime)
    record = await runtime.store.triggers.get(TENANT, trigger_id)
    assert record is not None and record.next_ms is not None
    await runtime.firing.fire(TENANT, trigger_id, record.next_ms - 60_000)
    assert await runtime.store.triggers.executions(TENANT, trigger_id, None, 10) == []
    after = await runtime.store.triggers.get(TENANT, trigger_id)
    assert after is not None and after.next_ms == record.next_ms


async def test_a_deleted_triggers_job_does_nothing(runtime: Runtime) -> None:
    trigger_id = await made(runtime)
    record = await runtime.store.triggers.get(TENANT, trigger_id)
    assert record is not None and record.next_ms is not None
    await runtime.triggers.delete(TENANT, trigger_id)
    await runtime.firing.fire(TENANT, trigger_id, record.next_ms)
    assert await runtime.store.triggers.get(TENANT, trigger_id) is None
    assert await runtime.store.redis.exists(keys.trigger_executions(TENANT, trigger_id)) == 0


async def test_a_read_requeues_the_lost_job_of_a_time_long_past(runtime: Runtime) -> None:
    trigger_id = await made(runtime)
    # its next time passed 5 minutes ago and no job is queued for it (lost with a failover, say)
    overdue = Schedule(MINUTELY, "Europe/Paris").next_after(now_ms() - 6 * 60_000)
    await set_next(runtime, trigger_id, overdue)
    assert not await queued(runtime, trigger_id, overdue)
    await runtime.triggers.get(TENANT, trigger_id)
    assert await queued(runtime, trigger_id, overdue)


async def swept_note(runtime: Runtime, trigger_id: str) -> float | None:
    score: float | None = await runtime.store.redis.zscore(
        keys.TRIGGER_TIMES, keys.member(TENANT, trigger_id)
    )
    return score


async def test_the_sweep_queues_again_the_lost_job_of_a_trigger_nobody_reads(runtime: Runtime) -> None:
    trigger_id = await made(runtime)
    # its next time passed 5 minutes ago (the fire that set it noted it) and its job was lost with it
    overdue = Schedule(MINUTELY, "Europe/Paris").next_after(now_ms() - 6 * 60_000)
    await set_next(runtime, trigger_id, overdue)
    await runtime.store.triggers.index(TENANT, trigger_id, overdue)
    assert not await queued(runtime, trigger_id, overdue)
    before = now_ms()
    assert await runtime.sweep.sweep_once() == 1
    assert await queued(runtime, trigger_id, overdue)
    # noted as looked at now: the next passes leave it alone until that is long past too
    assert (await swept_note(runtime, trigger_id) or 0) >= before
    assert await runtime.sweep.sweep_once() == 0


async def test_the_sweep_drops_the_notes_of_triggers_gone_or_paused_and_moves_early_ones(
    runtime: Runtime,
) -> None:
    gone, paused, early = await made(runtime), await made(runtime), await made(runtime)
    long_ago = now_ms() - 3_600_000
    await runtime.store.triggers.delete(TENANT, gone)  # a delete cut short before its note went
    await runtime.triggers.update(TENANT, paused, UpdateTrigger(status="paused"), None)
    for trigger_id in (gone, paused, early):
        await runtime.store.triggers.index(TENANT, trigger_id, long_ago)
    record = await runtime.store.triggers.get(TENANT, early)
    assert record is not None and record.next_ms is not None
    assert await runtime.sweep.sweep_once() == 3
    assert await swept_note(runtime, gone) is None and await swept_note(runtime, paused) is None
    # its next time is to come: its note is moved there, and nothing is queued again
    assert await swept_note(runtime, early) == record.next_ms
    assert await runtime.sweep.sweep_once() == 0
