"""arq's queue as the store writes and takes it (server/store/jobs.py), in-process against a real Redis: a
job queued in one round trip is arq's own (arq reads it back), its token names it, and a worker takes it
once, in one round trip too."""

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

TENANT = "t-jobs"
IN_PROGRESS_MS = 60_000


async def tokens(store: Store) -> list[bytes]:
    """The queue's wake-up tokens, oldest first."""
    listed = store.redis.lrange(keys.wake(store.jobs.queue_name), 0, -1)
    return await cast("Awaitable[list[bytes]]", listed)


async def test_a_queued_job_is_arqs_own_and_its_token_names_it(store: Store) -> None:
    await store.jobs.enqueue(TENANT, "a", 3)
    job = keys.job_id(TENANT, "a", 3)

    arq = ArqRedis(connection_pool=store.redis.connection_pool, job_deserializer=job_deserializer)
    info = await Job(job, arq, _queue_name=store.jobs.queue_name, _deserializer=job_deserializer).info()
    assert info is not None
    assert (info.function, list(info.args), info.kwargs) == (JOB_NAME, [TENANT, "a", 3], {})
    assert await store.redis.zscore(store.jobs.queue_name, job) == info.score
    assert 0 < now_ms() - int(info.score or 0) < 5_000
    assert await tokens(store) == [job.encode()]
    assert await store.jobs.waiting(TENANT, "a", 3)

    # arq's rule: a job that exists already is not queued again, and leaves no second token
    await store.jobs.enqueue(TENANT, "a", 3)
    assert await tokens(store) == [job.encode()]


async def test_a_job_is_taken_once_with_its_data(store: Store) -> None:
    await store.jobs.enqueue(TENANT, "a", 0)
    job = keys.job_id(TENANT, "a", 0)

    assert await store.jobs.next_wake(0.1) == job
    data = await store.jobs.take(job, IN_PROGRESS_MS)
    assert data is not None
    name, args, _, _, _ = deserialize_job_raw(data, deserializer=job_deserializer)
    assert (name, list(args)) == (JOB_NAME, [TENANT, "a", 0])
    assert 0 < await store.redis.pttl(keys.arq_in_progress(job)) <= IN_PROGRESS_MS
    assert not await store.jobs.waiting(TENANT, "a", 0)

    assert await store.jobs.take(job, IN_PROGRESS_MS) is None  # another worker has it


async def test_a_job_not_there_or_not_due_is_not_taken(store: Store) -> None:
    assert await store.jobs.take(keys.job_id(TENANT, "never", 0), IN_PROGRESS_MS) is None

    await store.jobs.enqueue(TENANT, "later", 0)
    later = keys.job_id(TENANT, "later", 0)
    await store.redis.zadd(store.jobs.queue_name, {later: now_ms() + 60_000})
    assert await store.jobs.take(later, IN_PROGRESS_MS) is None
    assert await store.jobs.waiting(TENANT, "later", 0)

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


async def test_tokens_no_worker_took_are_capped_oldest_first(store: Store) -> None:
    cap = jobs_module._MAX_TOKENS
    for fence in range(cap + 2):
        await store.jobs.enqueue(TENANT, "many", fence)
    kept = await tokens(store)
    assert len(kept) == cap
    assert kept[0] == keys.job_id(TENANT, "many", 2).encode()
    assert kept[-1] == keys.job_id(TENANT, "many", cap + 1).encode()


async def later(store: Store) -> dict[str, float]:
    """The queue's deferred set: job -> when its token is due (ms)."""
    scored = await store.redis.zrange(keys.deferred(store.jobs.queue_name), 0, -1, withscores=True)
    return {job.decode(): score for job, score in scored}


async def test_a_job_for_later_is_in_the_deferred_set_and_its_data_lives_past_its_time(store: Store) -> None:
    """Its token wakes a worker too early: take answers no job and tells the worker when it is due. Its
    data lives a day past its due time, as arq keeps a deferred job's: one due in two days is not lost."""
    heard: list[int] = []
    store.jobs.on_deferred = lambda job, due: heard.append(due) if job == "wh/far" else None
    two_days_ms = 2 * 86_400_000
    due = now_ms() + two_days_ms
    assert await store.jobs.enqueue_call("wh/far", JOB_NAME, (TENANT, "far", 0), run_at_ms=due)
    assert heard == [due]  # this process hears of it at once
    assert await later(store) == {"wh/far": due}
    assert await store.redis.zscore(store.jobs.queue_name, "wh/far") == due
    assert await store.redis.pttl(keys.arq_job("wh/far")) > two_days_ms + 86_000_000
    assert await tokens(store) == [b"wh/far"]

    assert await store.jobs.take("wh/far", IN_PROGRESS_MS) is None
    assert heard == [due, due]  # and so does the worker its early token woke
    assert await store.redis.exists(keys.arq_job("wh/far"))

    # a job for now is in no deferred set, and tells nobody
    assert await store.jobs.enqueue_call("wh/now", JOB_NAME, (TENANT, "now", 0))
    assert "wh/now" not in await later(store)
    assert heard == [due, due]


async def test_due_jobs_get_a_token_each_until_taken(store: Store) -> None:
    """push_due (due.lua): a token for each due job not in progress, due again AGAIN_MS later (a lost token
    is pushed again); a job gone from the queue leaves the set; the answer is the job due first of those
    left, and its due time."""
    soon, far = now_ms() + 300, now_ms() + 60_000
    for job, at in (("wh/due", soon), ("wh/running", soon), ("wh/gone", soon), ("wh/far", far)):
        await store.jobs.enqueue_call(job, JOB_NAME, (TENANT, job, 0), run_at_ms=at)
    await store.redis.delete(keys.wake(store.jobs.queue_name))
    assert await store.jobs.push_due(5_000) == ("wh/due", soon)  # nothing due yet
    assert await tokens(store) == []

    await asyncio.sleep((soon - now_ms()) / 1000 + 0.01)
    await store.redis.zrem(store.jobs.queue_name, "wh/gone")  # run and finished
    assert await store.jobs.take("wh/running", IN_PROGRESS_MS) is not None
    before = now_ms()
    earliest = await store.jobs.push_due(5_000)
    assert await tokens(store) == [b"wh/due"]
    scores = await later(store)
    assert set(scores) == {"wh/due", "wh/running", "wh/far"}
    assert before + 5_000 <= scores["wh/due"] == scores["wh/running"] <= now_ms() + 5_000
    assert earliest is not None and earliest[1] == scores["wh/due"] < far

    # taken, run and finished: the set forgets it the next time it would be due
    assert await store.jobs.take("wh/due", IN_PROGRESS_MS) is not None
    await store.jobs.finish("wh/due")
    await store.redis.zadd(keys.deferred(store.jobs.queue_name), {"wh/due": now_ms()})
    await store.jobs.push_due(5_000)
    assert "wh/due" not in await later(store)
    assert await tokens(store) == [b"wh/due"]  # no second token


async def test_a_fire_jobs_token_comes_again_sooner(store: Store) -> None:
    """A trigger's fire job held by a worker that was killed is due again FIRE_AGAIN_MS later, not AGAIN_MS:
    once its short mark runs out, a token brings another worker to it within a fraction of a second."""
    fire = keys.trigger_fire_job_id(TENANT, "tr_x", 1000)
    soon = now_ms() + 100
    for job in (fire, "wh/retry"):
        await store.jobs.enqueue_call(job, JOB_NAME, (TENANT, job, 0), run_at_ms=soon)
    await asyncio.sleep((soon - now_ms()) / 1000 + 0.01)
    assert await store.jobs.take(fire, jobs_module.FIRE_MARK_MS) is not None  # and its worker is killed
    before = now_ms()
    await store.jobs.push_due(5_000)
    scores = await later(store)
    assert before + 5_000 <= scores["wh/retry"] <= now_ms() + 5_000
    assert before + jobs_module.FIRE_AGAIN_MS <= scores[fire] <= now_ms() + jobs_module.FIRE_AGAIN_MS
    await store.redis.delete(keys.wake(store.jobs.queue_name))
    # its mark runs out: the next pass gives it a token
    await asyncio.sleep(max(jobs_module.FIRE_MARK_MS, jobs_module.FIRE_AGAIN_MS) / 1000 + 0.05)
    await store.jobs.push_due(5_000)
    assert await tokens(store) == [fire.encode()]
