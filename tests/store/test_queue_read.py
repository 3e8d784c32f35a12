"""A worker's read of the whole queue (store/jobs.py `ready`, scripts/ready.lua), in-process against a real
Redis: it finds the jobs no worker has in progress past a hundred that are (a busy queue's runs), the
earliest first, and none that is not due yet."""

from __future__ import annotations

from server.store import keys
from server.store.commands import now_ms
from server.store.store import Store


async def test_a_read_finds_the_jobs_past_those_in_progress(store: Store) -> None:
    redis, queue = store.redis, store.jobs.queue_name
    now = now_ms()
    running = [f"t/running-{n}" for n in range(250)]
    await redis.zadd(queue, {job: now - 10_000 + n for n, job in enumerate(running)})
    for job in running:
        await redis.psetex(keys.arq_in_progress(job), 60_000, b"1")
    # left with no turn behind them, the earlier first; and one queued for later
    await redis.zadd(queue, {"t/left-2": now - 500, "t/left-1": now - 1_000, "t/later": now + 60_000})
    assert await store.jobs.ready(100) == ["t/left-1", "t/left-2"]
    assert await store.jobs.ready(1) == ["t/left-1"]
    # those in progress are found again once no worker has them
    await redis.delete(keys.arq_in_progress(running[0]))
    assert await store.jobs.ready(100) == [running[0], "t/left-1", "t/left-2"]
