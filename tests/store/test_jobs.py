"""arq's queue as the store writes and takes it (server/store/jobs.py), in-process against a real Redis: a
job queued in one round trip is arq's own (arq reads it back), it waits its turn among its tenant's with a
token that wakes a worker, and a worker takes it once, in one round trip too (how the tenants' turns go:
tests/store/test_turns.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import cast

from arq.connections import ArqRedis
from arq.jobs import Job, deserialize_job_raw

from server.store import jobs as jobs_module
from server.store import keys
from server.store.commands import now_ms
from server.store.jobs import JOB_NAME, job_deserializer
from server.store.store import Store
from server.store.turns import WAKE_TOKEN, Marks, Turns

TENANT = "t-jobs"
IN_PROGRESS_MS = 60_000
MARKS = Marks(run=IN_PROGRESS_MS, attempt=IN_PROGRESS_MS)
#: jobs for later, named as webhook deliveries are (wh/<tenant>/...), and a trigger's fire of another tenant
FAR, NOW, DUE, RUNNING, GONE, RETRY = (
    f"wh/{TENANT}/{name}" for name in ("far", "now", "due", "running", "gone", "retry")
)
OTHER = "t-other"
OTHERS = keys.trigger_fire_job_id(OTHER, "tr_1", 1000)


async def listed(store: Store, key: str) -> list[bytes]:
    return await cast("Awaitable[list[bytes]]", store.redis.lrange(key, 0, -1))


async def tokens(store: Store) -> list[bytes]:
    """The queue's wake-up tokens, oldest first."""
    return await listed(store, keys.wake(store.jobs.queue_name))


async def waiting(store: Store, tenant: str = TENANT) -> list[bytes]:
    """A tenant's jobs waiting for their turns, oldest first."""
    return await listed(store, keys.waiting(store.jobs.queue_name, tenant))


async def test_a_queued_job_is_arqs_own_and_waits_its_turn(store: Store) -> None:
    await store.jobs.enqueue(TENANT, "a", 3)
    job = keys.job_id(TENANT, "a", 3)

    arq = ArqRedis(connection_pool=store.redis.connection_pool, job_deserializer=job_deserializer)
    info = await Job(job, arq, _queue_name=store.jobs.queue_name, _deserializer=job_deserializer).info()
    assert info is not None
    assert (info.function, list(info.args), info.kwargs) == (JOB_NAME, [TENANT, "a", 3], {})
    assert await store.redis.zscore(store.jobs.queue_name, job) == info.score
    assert 0 < now_ms() - int(info.score or 0) < 5_000
    assert await tokens(store) == [WAKE_TOKEN.encode()]
    assert await waiting(store) == [job.encode()]
    assert await listed(store, keys.ring(store.jobs.queue_name)) == [TENANT.encode()]
    assert await store.jobs.waiting(TENANT, "a", 3)

    # arq's rule: a job that exists already is not queued again, and leaves no second token nor turn
    await store.jobs.enqueue(TENANT, "a", 3)
    assert await tokens(store) == [WAKE_TOKEN.encode()]
    assert await waiting(store) == [job.encode()]


async def test_a_job_is_taken_once_with_its_data(store: Store) -> None:
    await store.jobs.enqueue(TENANT, "a", 0)
    job = keys.job_id(TENANT, "a", 0)

    assert await store.jobs.next_wake(0.1) == WAKE_TOKEN
    turn = await Turns(store.jobs, MARKS).take(woken=True)
    assert (turn.job, turn.more) == (job, False)
    data = turn.data
    assert data is not None
    name, args, _, _, _ = deserialize_job_raw(data, deserializer=job_deserializer)
    assert (name, list(args)) == (JOB_NAME, [TENANT, "a", 0])
    assert 0 < await store.redis.pttl(keys.arq_in_progress(job)) <= IN_PROGRESS_MS
    assert not await store.jobs.waiting(TENANT, "a", 0)

    assert await store.jobs.take(job, IN_PROGRESS_MS) is None  # another worker has it
    # its turn was taken with it, and no token is left to wake a worker for nothing
    assert await Turns(store.jobs, MARKS).take(woken=False) == (None, None, False)
    assert await tokens(store) == []
    assert not await store.redis.exists(
        keys.ring(store.jobs.queue_name), keys.waiting(store.jobs.queue_name, TENANT)
    )


async def test_a_job_not_there_or_not_due_is_not_taken(store: Store) -> None:
    assert await store.jobs.take(keys.job_id(TENANT, "never", 0), IN_PROGRESS_MS) is None

    # a job for later (in the deferred set, as wake.lua puts it) is not taken before its time
    later = f"wh/{TENANT}/later"
    assert await store.jobs.enqueue_call(later, JOB_NAME, (TENANT, "later", 0), run_at_ms=now_ms() + 60_000)
    assert await store.jobs.take(later, IN_PROGRESS_MS) is None
    assert not await store.redis.exists(keys.arq_in_progress(later))

    # one for now whose score is past the taker's clock (queued after it read its clock, or by a process
    # whose clock runs ahead) is taken: it is due, and no turn would come for it again
    await store.jobs.enqueue(TENANT, "ahead", 0)
    ahead = keys.job_id(TENANT, "ahead", 0)
    await store.redis.zadd(store.jobs.queue_name, {ahead: now_ms() + 60_000})
    assert await store.jobs.take(ahead, IN_PROGRESS_MS) is not None

    # a job whose data expired leaves the queue (the reaper queues its run again)
    await store.jobs.enqueue(TENANT, "expired", 0)
    expired = keys.job_id(TENANT, "expired", 0)
    await store.redis.delete(keys.arq_job(expired))
    assert await store.jobs.take(expired, IN_PROGRESS_MS) is None
    assert await store.redis.zscore(store.jobs.queue_name, expired) is None


async def test_a_finished_job_is_gone_and_a_released_one_is_taken_again(store: Store) -> None:
    for interaction_id in ("done", "released"):
        await store.jobs.enqueue(TENANT, interaction_id, 0)
        assert await store.jobs.take(keys.job_id(TENANT, interaction_id, 0), IN_PROGRESS_MS)

    done = keys.job_id(TENANT, "done", 0)
    await store.jobs.finish(done)
    assert await store.redis.zscore(store.jobs.queue_name, done) is None
    assert not await store.redis.exists(keys.arq_job(done), keys.arq_in_progress(done))

    released = keys.job_id(TENANT, "released", 0)
    await store.jobs.release(released)
    assert await store.jobs.waiting(TENANT, "released", 0)
    assert await store.jobs.take(released, IN_PROGRESS_MS) is not None


async def test_tokens_no_worker_took_are_capped_and_every_job_keeps_its_turn(store: Store) -> None:
    cap = jobs_module._MAX_TOKENS
    for fence in range(cap + 2):
        await store.jobs.enqueue(TENANT, "many", fence)
    assert await tokens(store) == [WAKE_TOKEN.encode()] * cap
    assert await waiting(store) == [keys.job_id(TENANT, "many", fence).encode() for fence in range(cap + 2)]


async def later(store: Store) -> dict[str, float]:
    """The queue's deferred set: job -> when its token is due (ms)."""
    scored = await store.redis.zrange(keys.deferred(store.jobs.queue_name), 0, -1, withscores=True)
    return {job.decode(): score for job, score in scored}


async def test_a_job_for_later_is_in_the_deferred_set_and_its_data_lives_past_its_time(store: Store) -> None:
    """Its token wakes a worker too early: take answers no job and tells the worker when it is due. Its
    data lives a day past its due time, as arq keeps a deferred job's: one due in two days is not lost."""
    heard: list[int] = []
    store.jobs.on_deferred = lambda job, due: heard.append(due) if job == FAR else None
    two_days_ms = 2 * 86_400_000
    due = now_ms() + two_days_ms
    assert await store.jobs.enqueue_call(FAR, JOB_NAME, (TENANT, "far", 0), run_at_ms=due)
    assert heard == [due]  # this process hears of it at once
    assert await later(store) == {FAR: due}
    assert await store.redis.zscore(store.jobs.queue_name, FAR) == due
    assert await store.redis.pttl(keys.arq_job(FAR)) > two_days_ms + 86_000_000
    assert await tokens(store) == [WAKE_TOKEN.encode()]
    assert await waiting(store) == [FAR.encode()]

    assert await Turns(store.jobs, MARKS).take(woken=False) == (None, None, False)
    assert heard == [due, due]  # and so does the worker its early turn woke
    assert await tokens(store) == [] and await waiting(store) == []
    assert await store.redis.exists(keys.arq_job(FAR))

    # a job for now is in no deferred set, and tells nobody
    assert await store.jobs.enqueue_call(NOW, JOB_NAME, (TENANT, "now", 0))
    assert NOW not in await later(store)
    assert heard == [due, due]


async def test_due_jobs_get_a_turn_each_until_taken(store: Store) -> None:
    """push_due (due.lua): a turn for each due job not in progress, in its tenant's list, due again
    AGAIN_MS later (a lost turn is given again); a job gone from the queue leaves the set; the answer is
    the job due first of those left, and its due time."""
    soon, far = now_ms() + 300, now_ms() + 60_000
    for job, at in ((DUE, soon), (RUNNING, soon), (GONE, soon), (FAR, far), (OTHERS, soon + 1)):
        await store.jobs.enqueue_call(job, JOB_NAME, (TENANT, job, 0), run_at_ms=at)
    queue = store.jobs.queue_name
    await store.redis.delete(keys.wake(queue), keys.ring(queue), keys.waiting(queue, TENANT))
    await store.redis.delete(keys.waiting(queue, OTHER))
    assert await store.jobs.push_due(5_000) == (DUE, soon)  # nothing due yet
    assert await tokens(store) == []

    await asyncio.sleep((soon - now_ms()) / 1000 + 0.01)
    await store.redis.zrem(store.jobs.queue_name, GONE)  # run and finished
    assert await store.jobs.take(RUNNING, IN_PROGRESS_MS) is not None
    before = now_ms()
    earliest = await store.jobs.push_due(5_000)
    assert await tokens(store) == [WAKE_TOKEN.encode()] * 2
    # each in its tenant's list: a delivery's and a fire's ids name it after their prefix
    assert await waiting(store) == [DUE.encode()]
    assert await waiting(store, OTHER) == [OTHERS.encode()]
    assert await listed(store, keys.ring(queue)) == [TENANT.encode(), OTHER.encode()]
    scores = await later(store)
    assert set(scores) == {DUE, RUNNING, FAR, OTHERS}
    assert before + 5_000 <= scores[DUE] == scores[RUNNING] <= now_ms() + 5_000
    # the one due again first: the fire, FIRE_AGAIN_MS on
    assert earliest == (OTHERS, scores[OTHERS]) and scores[OTHERS] < scores[DUE]

    # taken, run and finished: the set forgets it the next time it would be due
    assert await store.jobs.take(DUE, IN_PROGRESS_MS) is not None
    await store.jobs.finish(DUE)
    await store.redis.zadd(keys.deferred(store.jobs.queue_name), {DUE: now_ms()})
    await store.jobs.push_due(5_000)
    assert DUE not in await later(store)
    assert await tokens(store) == [WAKE_TOKEN.encode()] * 2  # no second token
    assert await waiting(store) == [DUE.encode()]


async def test_a_fire_jobs_token_comes_again_sooner(store: Store) -> None:
    """A trigger's fire job held by a worker that was killed is due again FIRE_AGAIN_MS later, not AGAIN_MS:
    once its short mark runs out, a turn brings another worker to it within a fraction of a second."""
    fire = keys.trigger_fire_job_id(TENANT, "tr_x", 1000)
    soon = now_ms() + 100
    for job in (fire, RETRY):
        await store.jobs.enqueue_call(job, JOB_NAME, (TENANT, job, 0), run_at_ms=soon)
    await asyncio.sleep((soon - now_ms()) / 1000 + 0.01)
    assert await store.jobs.take(fire, jobs_module.FIRE_MARK_MS) is not None  # and its worker is killed
    before = now_ms()
    await store.jobs.push_due(5_000)
    scores = await later(store)
    assert before + 5_000 <= scores[RETRY] <= now_ms() + 5_000
    assert before + jobs_module.FIRE_AGAIN_MS <= scores[fire] <= now_ms() + jobs_module.FIRE_AGAIN_MS
    queue = store.jobs.queue_name
    await store.redis.delete(keys.wake(queue), keys.ring(queue), keys.waiting(queue, TENANT))
    # its mark runs out: the next pass gives it a turn
    await asyncio.sleep(max(jobs_module.FIRE_MARK_MS, jobs_module.FIRE_AGAIN_MS) / 1000 + 0.05)
    await store.jobs.push_due(5_000)
    assert await tokens(store) == [WAKE_TOKEN.encode()]
    assert await waiting(store) == [fire.encode()]
