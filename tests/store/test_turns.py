"""The tenants' turns on the queue (store/scripts/_turns.lua, take_turn.lua), in-process against a real
Redis: each tenant's jobs wait in a list of its own and the tenants with jobs waiting take turns, so one
tenant's backlog, beyond the tokens' cap too, holds another tenant's job back by one turn and keeps its own
order; a job a worker took by another way is passed over with its token; a job for now is taken whatever
the taker's clock says, one for later not before its time; each kind's job is marked as its kind's."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import cast

from server.store import jobs as jobs_module
from server.store import keys
from server.store import turns as turns_module
from server.store.commands import now_ms
from server.store.jobs import EVENT_JOB
from server.store.store import Store
from server.store.turns import WAKE_TOKEN, Marks, Turn, Turns

A, B, C = "t-a", "t-b", "t-c"
MARKS = Marks(run=60_000, attempt=20_000, fire=7_000)


async def tokens(store: Store) -> int:
    return await cast("Awaitable[int]", store.redis.llen(keys.wake(store.jobs.queue_name)))


async def take(store: Store, *, woken: bool = False) -> Turn:
    if woken:
        assert await store.jobs.next_wake(0.1) == WAKE_TOKEN
    return await Turns(store.jobs, MARKS).take(woken=woken)


async def test_tenants_take_turns_each_in_its_own_order(store: Store) -> None:
    for tenant, count in ((A, 3), (B, 1), (C, 2)):
        for n in range(count):
            await store.jobs.enqueue(tenant, f"i{n}", 0)
    taken = [await take(store, woken=True) for _ in range(6)]
    expected = [(A, 0), (B, 0), (C, 0), (A, 1), (C, 1), (A, 2)]
    assert [turn.job for turn in taken] == [keys.job_id(t, f"i{n}", 0) for t, n in expected]
    assert [turn.more for turn in taken] == [True] * 5 + [False]
    assert all(turn.data for turn in taken)
    assert await tokens(store) == 0
    assert await take(store) == (None, None, False)


async def test_a_backlog_beyond_the_token_cap_holds_another_tenants_job_back_by_one_turn(
    store: Store,
) -> None:
    """A's backlog outgrows the tokens' cap (the oldest tokens dropped): B's job, queued after all of it,
    is the second taken; A's are taken in their order, every one of them, by a worker that takes the next
    one as long as its take says more wait."""
    backlog = jobs_module._MAX_TOKENS + 200
    for n in range(backlog):
        await store.jobs.enqueue(A, f"i{n}", 0)
    await store.jobs.enqueue(B, "late", 0)
    assert await tokens(store) == jobs_module._MAX_TOKENS

    first, second = await take(store, woken=True), await take(store)
    assert (first.job, second.job) == (keys.job_id(A, "i0", 0), keys.job_id(B, "late", 0))
    rest = [first]
    while rest[-1].more:
        rest.append(await take(store))
    assert [turn.job for turn in rest] == [keys.job_id(A, f"i{n}", 0) for n in range(backlog)]
    # each take took a token with it, but for those the cap had dropped
    assert await tokens(store) == 0
    assert await store.redis.zcard(store.jobs.queue_name) == backlog + 1  # all taken, none lost


async def test_a_job_taken_another_way_is_passed_over_with_its_token(store: Store) -> None:
    """A job a worker took by its name (a token of the version before, a read of the whole queue) or
    that was given a second turn (the reaper's wake_for) is passed over, and the token queued with it
    goes too, so that no worker is woken for it."""
    for n in range(3):
        await store.jobs.enqueue(A, f"i{n}", 0)
    await store.jobs.enqueue(B, "b", 0)
    for n in (0, 1):
        assert await store.jobs.take(keys.job_id(A, f"i{n}", 0), 60_000) is not None
    await store.jobs.wake_for(B, "b", 0)  # B's job listed twice
    assert await tokens(store) == 5

    # A's first is passed over, and the turn is B's; then A's second and B's second listing are passed
    # over on the way to A's third
    turn = await take(store, woken=True)
    assert (turn.job, turn.more) == (keys.job_id(B, "b", 0), True)
    assert await tokens(store) == 3
    turn = await take(store)
    assert (turn.job, turn.more) == (keys.job_id(A, "i2", 0), False)
    assert await tokens(store) == 0


async def test_a_take_passes_over_a_bounded_number_then_says_more_wait(store: Store) -> None:
    over = turns_module._PASSED_OVER
    for n in range(over + 1):
        await store.jobs.enqueue(A, f"i{n}", 0)
        if n < over:
            assert await store.jobs.take(keys.job_id(A, f"i{n}", 0), 60_000) is not None
    assert await take(store) == (None, None, True)
    assert (await take(store)).job == keys.job_id(A, f"i{over}", 0)


async def test_each_kind_of_job_is_marked_for_its_kinds_time(store: Store) -> None:
    run = keys.job_id(A, "i0", 0)
    event = keys.event_job_id(A, "i1")
    fire = keys.trigger_fire_job_id(A, "tr_1", 1000)
    await store.jobs.enqueue(A, "i0", 0)
    for job in (event, fire):
        assert await store.jobs.enqueue_call(job, EVENT_JOB, (A, job, 0))
    for job, mark in ((run, MARKS.run), (event, MARKS.attempt), (fire, MARKS.fire)):
        assert (await take(store)).job == job
        assert mark - 2_000 < await store.redis.pttl(keys.arq_in_progress(job)) <= mark


async def test_a_job_for_now_scored_past_the_takers_clock_is_taken_in_its_turn(store: Store) -> None:
    """A worker reads its clock, then its take runs: a job queued in between, or by a process whose clock
    runs ahead, scores later than the take's `now`. It is due, and taken: left, it would have no turn
    again, only a read of the whole queue after 15 empty waits (30 s) would find it."""
    await store.jobs.enqueue(A, "ahead", 0)
    job = keys.job_id(A, "ahead", 0)
    await store.redis.zadd(store.jobs.queue_name, {job: now_ms() + 60_000})
    assert (await take(store)).job == job


async def test_a_job_for_later_taken_too_early_has_its_next_turn_at_its_time(store: Store) -> None:
    """Its turn came early (the one queued with it, which tells the worker its time; or a due one taken
    with a clock read just before its time): not taken, and its next turn is due at its time (due.lua),
    not a retry's 5 s later."""
    queue, job, due = store.jobs.queue_name, keys.event_job_id(A, "later"), now_ms() + 60_000
    assert await store.jobs.enqueue_call(job, EVENT_JOB, (A, "later", 0), run_at_ms=due)
    await store.redis.zadd(keys.deferred(queue), {job: due + 5_000})  # as due.lua leaves one it gave a turn
    assert await take(store) == (None, None, False)
    assert await store.redis.zscore(keys.deferred(queue), job) == due
    assert not await store.redis.exists(keys.arq_in_progress(job))
