"""arq's queue as the store writes and takes it (server/store/jobs.py), in-process against a real Redis: a
job queued in one round trip is arq's own (arq reads it back), its token names it, and a worker takes it
once, in one round trip too."""

from __future__ import annotations

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
