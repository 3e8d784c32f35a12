"""How an idle worker (server/worker_host.py) is woken, in-process: a job's token names it, so the worker
takes that job without reading the queue; a token of an older version names none, and the worker reads
the queue; a worker that is stopping hands a token it took to another worker."""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Awaitable
from typing import cast

from arq.connections import ArqRedis

from server.protocol import status as st
from server.runner.loops import first_pause
from server.runtime import Runtime
from server.store import keys
from server.store.jobs import JOB_NAME, job_serializer
from server.worker_host import WakingWorker, WorkerHost

from ..waiting import until_async
from .harness import reply_of

TENANT = "tenant-wake"
ECHO = {"model": "echo", "input": "hi", "background": True}


def count_queue_reads(worker: WakingWorker) -> list[int]:
    """A one-item list counting the worker's reads of the whole queue from now on."""
    reads = [0]
    read_queue = worker._poll_iteration

    async def counted() -> None:
        reads[0] += 1
        await read_queue()

    worker._poll_iteration = counted  # type: ignore[method-assign]
    return reads


async def blocked(runtime: Runtime) -> bool:
    """Whether a client waits in a blocking pop (flag "b"); the test's workers are the only ones."""
    clients = await runtime.store.redis.client_list()
    return any(client.get("cmd") == "blpop" and "b" in client.get("flags", "") for client in clients)


async def waiting_for_a_token(runtime: Runtime) -> None:
    """Until the worker's blocking pop is in Redis (it has read the queue once at start)."""
    await until_async(lambda: blocked(runtime))


async def completed(runtime: Runtime, interaction_id: str) -> bool:
    return (await runtime.store.runs.state(TENANT, interaction_id)).status == st.COMPLETED


async def test_a_token_names_its_job_and_the_worker_takes_it_without_reading_the_queue(
    runtime: Runtime, worker: WorkerHost
) -> None:
    await waiting_for_a_token(runtime)
    reads = count_queue_reads(worker.worker)

    interaction_id = (await reply_of(runtime, TENANT, ECHO)).interaction.id
    assert interaction_id
    await until_async(lambda: completed(runtime, interaction_id))

    assert reads == [0]
    # the job is done with: out of arq's queue, its keys gone
    job = keys.job_id(TENANT, interaction_id, 0)
    assert await runtime.store.redis.zscore(runtime.store.jobs.queue_name, job) is None
    assert not await runtime.store.redis.exists(keys.arq_job(job), keys.arq_in_progress(job))


async def test_a_token_naming_no_job_makes_the_worker_read_the_queue(
    runtime: Runtime, worker: WorkerHost
) -> None:
    await waiting_for_a_token(runtime)
    reads = count_queue_reads(worker.worker)
    # a web process of the version before queues with arq and leaves a token "1"; the job is for an
    # interaction that does not exist, which the worker's run ends at once
    redis = runtime.store.redis
    queue = runtime.store.jobs.queue_name
    arq = ArqRedis(connection_pool=redis.connection_pool, job_serializer=job_serializer)
    await arq.enqueue_job(JOB_NAME, TENANT, "ghost", 0, _queue_name=queue, _job_id="older")
    await runtime.store.jobs.commands.rpush(keys.wake(queue), "1")

    async def finished() -> bool:
        return await redis.zscore(queue, "older") is None and not await redis.exists(keys.arq_job("older"))

    await until_async(finished)
    assert reads[0] >= 1


async def test_a_stopping_worker_hands_a_token_it_took_to_another_worker(
    runtime: Runtime, worker: WorkerHost
) -> None:
    await waiting_for_a_token(runtime)
    worker.worker.allow_pick_jobs = False  # as WorkerHost.stop begins

    await runtime.store.jobs.enqueue(TENANT, "for-another", 0)
    job = keys.job_id(TENANT, "for-another", 0)
    tokens = keys.wake(runtime.store.jobs.queue_name)

    async def handed_back() -> bool:
        listed = runtime.store.redis.lrange(tokens, 0, -1)
        kept = await cast("Awaitable[list[bytes]]", listed)
        return not await blocked(runtime) and kept == [job.encode()]

    await until_async(handed_back)
    assert await runtime.store.jobs.waiting(TENANT, "for-another", 0)


def test_a_first_pause_is_a_random_part_of_the_period() -> None:
    pauses = [first_pause(2.0) for _ in range(2000)]
    assert 0.1 <= min(pauses) and max(pauses) <= 2.0
    # spread over the period: processes started together run out of step
    assert min(pauses) < 0.3 and max(pauses) > 1.8 and 0.9 < statistics.mean(pauses) < 1.2


async def test_a_worker_stopping_with_nothing_running_ends_its_poll_loop(runtime: Runtime) -> None:
    host = WorkerHost(runtime)
    await host.start()
    await waiting_for_a_token(runtime)
    async with asyncio.timeout(5):
        await host.stop(grace=0.5)
    assert all(task.done() for task in host.tasks)
