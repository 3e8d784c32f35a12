"""A worker's job loop (server/runner/job_loop.py) and the marks it keeps on the jobs it runs, in-process on a
real Redis: a trigger's fire keeps its short mark for as long as it runs (so no other worker takes it while
it goes on, and one whose worker was killed is taken again within a second), is held for a retry's time
when it fails (but for Redis failing it: then it is taken again soon), and is done with once it ends."""

from __future__ import annotations

import asyncio
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError

from server.runner.job_loop import JobLoop
from server.store import keys
from server.store.jobs import FIRE_MARK_MS, FIRE_RETRY_MS, TRIGGER_JOB
from server.store.store import Store

TENANT = "t-loop"
JOB = keys.trigger_fire_job_id(TENANT, "tr_x", 1000)


async def loop_running(store: Store, function: Any) -> JobLoop:
    """A loop with the fire job queued and started by it, `function` its work."""
    loop = JobLoop(
        store.jobs, {TRIGGER_JOB: function}, {}, max_jobs=2, poll_delay_s=0.1, attempt_mark_ms=1000
    )
    assert await store.jobs.enqueue_call(JOB, TRIGGER_JOB, (TENANT, "tr_x", 1000))
    await loop.start([JOB])
    assert JOB in loop.tasks
    return loop


async def test_a_fire_keeps_its_short_mark_while_it_runs(store: Store) -> None:
    release = asyncio.Event()

    async def slow(ctx: dict[str, Any], *args: Any) -> None:
        await release.wait()

    loop = await loop_running(store, slow)
    await asyncio.sleep(3 * FIRE_MARK_MS / 1000)
    assert 0 < await store.redis.pttl(keys.arq_in_progress(JOB)) <= FIRE_MARK_MS
    assert await store.jobs.take(JOB, FIRE_MARK_MS) is None  # another worker finds it taken
    release.set()
    await loop.tasks[JOB]
    assert not await store.redis.exists(keys.arq_job(JOB), keys.arq_in_progress(JOB))
    assert await store.redis.zscore(store.jobs.queue_name, JOB) is None


async def test_a_fire_that_failed_is_held_for_a_retrys_time(store: Store) -> None:
    async def failing(ctx: dict[str, Any], *args: Any) -> None:
        raise RuntimeError("a bug")

    loop = await loop_running(store, failing)
    await loop.tasks[JOB]
    # still queued, for a retry: not once its short mark runs out, but FIRE_RETRY_MS on
    assert await store.redis.zscore(store.jobs.queue_name, JOB) is not None
    assert FIRE_MARK_MS < await store.redis.pttl(keys.arq_in_progress(JOB)) <= FIRE_RETRY_MS


async def test_a_fire_that_redis_failed_is_taken_again_soon(store: Store) -> None:
    async def cut(ctx: dict[str, Any], *args: Any) -> None:
        raise RedisConnectionError("the primary went away")

    loop = await loop_running(store, cut)
    await loop.tasks[JOB]
    assert await store.redis.zscore(store.jobs.queue_name, JOB) is not None
    assert 0 < await store.redis.pttl(keys.arq_in_progress(JOB)) <= FIRE_MARK_MS
