"""How an idle worker (server/worker_host.py) is woken, in-process: a job's token wakes it to take the next
turn, without reading the queue; a token of the version before names its job, which the worker takes, and
jobs that version queued beyond its tokens' cap are found by the worker's read of the queue; an older
version's token names none, and the worker reads the queue; a token a dead worker took leaves its job to
the reaper's next turn for it; a worker that is stopping hands a token it took to another worker; a job
queued for later runs at its time while other jobs stream in (runner/due_jobs.py), whoever queued it."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import cast

import redis.asyncio as aioredis
from arq.connections import ArqRedis
from arq.jobs import serialize_job

from server.launch.redis_process import RedisProcess
from server.protocol import status as st
from server.runner.job_loop import JobLoop
from server.runner.loops import first_pause
from server.runtime import Runtime
from server.store import keys
from server.store.commands import now_ms
from server.store.jobs import EVENT_JOB, JOB_NAME, Jobs, job_serializer
from server.store.turns import WAKE_TOKEN
from server.worker_host import WorkerHost

from ..waiting import until_async
from .harness import reply_of

TENANT = "tenant-wake"
ECHO = {"model": "echo", "input": "hi", "background": True}


def count_queue_reads(worker: JobLoop) -> list[int]:
    """A one-item list counting the worker's reads of the whole queue from now on."""
    reads = [0]
    read_queue = worker.read_queue

    async def counted() -> None:
        reads[0] += 1
        await read_queue()

    worker.read_queue = counted  # type: ignore[method-assign]
    return reads


async def blocked(runtime: Runtime, count: int = 1) -> bool:
    """Whether `count` clients wait in a blocking pop (flag "b"); the test's workers are the only ones."""
    clients = await runtime.store.redis.client_list()
    waiting = [c for c in clients if c.get("cmd") == "blpop" and "b" in c.get("flags", "")]
    return len(waiting) >= count


async def waiting_for_a_token(runtime: Runtime) -> None:
    """Until the worker's blocking pop is in Redis (it has read the queue once at start)."""
    await until_async(lambda: blocked(runtime))


async def completed(runtime: Runtime, interaction_id: str) -> bool:
    return (await runtime.store.runs.state(TENANT, interaction_id)).status == st.COMPLETED


async def test_a_token_wakes_the_worker_to_take_the_job_without_reading_the_queue(
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
    # a web process of an older version queues with arq and leaves a token "1"; the job is for an
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


async def queue_as_the_version_before(runtime: Runtime, interaction_id: str, *, token: bool) -> str:
    """A run's job as the version before queued it (its wake.lua): arq's job and a token naming it, in no
    tenant's list (`token=False`: its token dropped by the cap). The interaction does not exist: the run
    ends at once, and the job is done with."""
    redis, queue = runtime.store.redis, runtime.store.jobs.queue_name
    job = keys.job_id(TENANT, interaction_id, 0)
    data = serialize_job(JOB_NAME, (TENANT, interaction_id, 0), {}, None, now_ms(), serializer=job_serializer)
    await redis.psetex(keys.arq_job(job), 86_400_000, data)
    await redis.zadd(queue, {job: now_ms()})
    if token:
        await runtime.store.jobs.commands.rpush(keys.wake(queue), job)
    return job


def all_done(runtime: Runtime, jobs: list[str]) -> Callable[[], Awaitable[bool]]:
    async def done() -> bool:
        left = await runtime.store.redis.exists(*(keys.arq_job(job) for job in jobs))
        return left == 0 and not await runtime.store.redis.zcard(runtime.store.jobs.queue_name)

    return done


async def test_a_token_of_the_version_before_names_its_job_which_the_worker_takes(
    runtime: Runtime, worker: WorkerHost
) -> None:
    """A web process of the version before, still running beside this version's workers (a rolling
    upgrade), queues a job with a token naming it: the worker takes that job, without reading the queue."""
    await waiting_for_a_token(runtime)
    reads = count_queue_reads(worker.worker)
    job = await queue_as_the_version_before(runtime, "ghost-named", token=True)
    await until_async(all_done(runtime, [job]))
    assert reads == [0]


async def test_jobs_the_version_before_queued_run_after_an_upgrade(runtime: Runtime) -> None:
    """The version before queued a backlog, beyond its tokens' cap too, then the workers were upgraded: the
    jobs its tokens name are taken by them, the rest found by the new worker's read of the queue."""
    named = [await queue_as_the_version_before(runtime, f"ghost-{n}", token=True) for n in range(5)]
    beyond = [await queue_as_the_version_before(runtime, f"ghost-beyond-{n}", token=False) for n in range(3)]
    host = WorkerHost(runtime)
    await host.start()
    try:
        await until_async(all_done(runtime, named + beyond), within=10)
    finally:
        await host.stop(grace=0.5)


async def test_a_job_whose_token_a_dead_worker_took_runs_at_its_next_turn(
    runtime: Runtime, private_redis: RedisProcess
) -> None:
    """A worker pops a token, then takes a turn: one killed in between (here a client that pops the token
    and never takes a job) takes the token with it, and the worker left waits with no token for the job.
    Past the job's pickup deadline (1 s here) the reaper gives it another turn, whose token wakes that
    worker."""
    thief = aioredis.Redis.from_url(private_redis.url)
    host = WorkerHost(runtime)
    queue = runtime.settings.worker.queue_name
    try:
        # the dead worker: first in line for the token, and gone with it
        stolen = asyncio.create_task(thief.blpop([keys.wake(queue)], timeout=10))
        await until_async(lambda: blocked(runtime))
        await host.start()
        await until_async(lambda: blocked(runtime, 2))
        interaction_id = (await reply_of(runtime, TENANT, ECHO)).interaction.id
        assert interaction_id
        assert (await stolen) == (keys.wake(queue).encode(), WAKE_TOKEN.encode())
        await until_async(lambda: completed(runtime, interaction_id), within=10)
    finally:
        await host.stop(grace=0.5)
        await thief.aclose()


async def test_a_stopping_worker_hands_a_token_it_took_to_another_worker(
    runtime: Runtime, worker: WorkerHost
) -> None:
    await waiting_for_a_token(runtime)
    worker.worker.taking = False  # as WorkerHost.stop begins

    await runtime.store.jobs.enqueue(TENANT, "for-another", 0)
    job = keys.job_id(TENANT, "for-another", 0)
    tokens = keys.wake(runtime.store.jobs.queue_name)

    async def handed_back() -> bool:
        listed = runtime.store.redis.lrange(tokens, 0, -1)
        kept = await cast("Awaitable[list[bytes]]", listed)
        return not await blocked(runtime) and kept == [WAKE_TOKEN.encode()]

    await until_async(handed_back)
    assert await runtime.store.jobs.waiting(TENANT, "for-another", 0)
    # its turn still waits for it
    listed = runtime.store.redis.lrange(keys.waiting(runtime.store.jobs.queue_name, TENANT), 0, -1)
    assert await cast("Awaitable[list[bytes]]", listed) == [job.encode()]


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


class Traffic:
    """A steady stream of other jobs (runs of interactions that do not exist, which end at once), one
    every 20 ms: its tokens keep an idle worker's waits from ever coming back empty."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.queued = 0

    async def run(self, seconds: float) -> None:
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            await self.runtime.store.jobs.enqueue(TENANT, f"traffic-{self.queued}", 0)
            self.queued += 1
            await asyncio.sleep(0.02)


async def later_job_ran(
    runtime: Runtime, job: str, due_ms: int, traffic_seconds: float, *, told: bool = True
) -> float:
    """Queue `job` (an event job of an interaction that does not exist: it ends at once) for `due_ms`
    while other jobs stream in; returns when it was done with (s, wall clock), which must be during the
    traffic. `told=False`: queued as a process with no worker in it queues it (nobody hears of it)."""
    jobs = runtime.store.jobs
    traffic = Traffic(runtime)
    streaming = asyncio.create_task(traffic.run(traffic_seconds))
    heard, jobs.on_deferred = jobs.on_deferred, (jobs.on_deferred if told else None)
    try:
        await asyncio.sleep(0.2)
        assert await jobs.enqueue_call(job, EVENT_JOB, (TENANT, "ghost", 1), run_at_ms=due_ms)
    finally:
        jobs.on_deferred = heard

    async def done() -> float | None:
        gone = not await runtime.store.redis.exists(keys.arq_job(job))
        return time.time() if gone else None

    ran = await until_async(done, within=traffic_seconds, interval=0.01)
    assert not streaming.done()  # while the traffic still flowed
    await streaming
    assert traffic.queued > 50
    return ran


async def test_a_job_for_later_runs_at_its_time_under_steady_traffic(
    runtime: Runtime, worker: WorkerHost
) -> None:
    """Its token at its time wakes a worker (runner/due_jobs.py): not a read of the queue after 15 empty
    waits, which never come while other jobs stream in."""
    await waiting_for_a_token(runtime)
    due_ms = now_ms() + 1_200
    ran = await later_job_ran(runtime, "wh/later-busy", due_ms, traffic_seconds=6.0)
    assert ran >= due_ms / 1000


async def test_a_job_for_later_queued_elsewhere_is_heard_of_from_its_early_token(
    runtime: Runtime, worker: WorkerHost
) -> None:
    """A web process with no worker in it queues a job for later: the worker that takes its token too
    early hears its due time from take.lua, and its timer gives the job its token then."""
    await waiting_for_a_token(runtime)
    jobs, heard = runtime.store.jobs, []
    timer = jobs.on_deferred
    assert timer is not None

    def noted(job: str, due: int) -> None:
        heard.append(due)
        timer(job, due)

    jobs.on_deferred = noted
    due_ms = now_ms() + 1_200
    ran = await later_job_ran(runtime, "wh/later-told", due_ms, traffic_seconds=6.0, told=False)
    assert ran >= due_ms / 1000
    assert heard[0] == due_ms  # from the early turn, not from the enqueue


async def queued_unheard(runtime: Runtime, job: str, due_ms: int) -> None:
    """A job for later queued as wake.lua queues one, but with no token: nobody hears of it."""
    redis, queue = runtime.store.redis, runtime.store.jobs.queue_name
    await redis.zadd(queue, {job: due_ms})
    await redis.zadd(keys.deferred(queue), {job: due_ms})
    data = serialize_job(EVENT_JOB, (TENANT, "ghost", 1), {}, None, now_ms(), serializer=job_serializer)
    await redis.set(keys.arq_job(job), data)


def done_with(runtime: Runtime, job: str) -> Callable[[], Awaitable[bool]]:
    async def done() -> bool:
        return not await runtime.store.redis.exists(keys.arq_job(job))

    return done


async def test_a_job_for_later_nobody_heard_of_is_found_by_the_timers_check(runtime: Runtime) -> None:
    """Its early token lost (trimmed, or taken by a worker that died) and its knower gone: the timer's
    check (every 15 waits of poll_delay_ms; here 0.3 s) gives it its token."""
    host = WorkerHost(runtime)
    host.due.check_ms = 300
    await host.start()
    try:
        await waiting_for_a_token(runtime)
        await queued_unheard(runtime, "wh/unheard", now_ms() + 500)
        await until_async(done_with(runtime, "wh/unheard"), within=5.0)
    finally:
        await host.stop(grace=0.5)


async def test_a_stopping_worker_hands_the_job_it_would_wake_for_to_another(runtime: Runtime) -> None:
    """The only worker that knew of a job for later stops before its time: its token goes to another
    worker (whose own check would come 10 minutes later), which then wakes for it."""
    other, stopping = WorkerHost(runtime), WorkerHost(runtime)
    other.due.check_ms = 600_000
    await other.start()
    await stopping.start()
    jobs = runtime.store.jobs
    try:
        await until_async(lambda: blocked(runtime))
        due_ms = now_ms() + 1_500
        await queued_unheard(runtime, "wh/handed", due_ms)
        stopping.due.note("wh/handed", due_ms)
        # one timer per process in production: here the other worker's is the one take.lua tells
        jobs.on_deferred = other.due.note
        await stopping.stop(grace=0.5)
        await until_async(done_with(runtime, "wh/handed"), within=5.0)
        assert now_ms() >= due_ms
    finally:
        await other.stop(grace=0.5)


async def test_a_job_for_later_whose_knower_died_is_woken_by_the_due_channel(
    runtime: Runtime, private_redis: RedisProcess
) -> None:
    """The worker that takes a job's early turn is the one that knows its time (take_turn.lua); one killed
    with it takes that along, and the others' timers would find the job only at their next check (15 waits
    of poll_delay_ms, 30 s). wake.lua also tells each job for later on the due channel, which every
    process's timer hears: here the only way the worker can know."""
    thief = aioredis.Redis.from_url(private_redis.url)
    host = WorkerHost(runtime)
    host.due.check_ms = 600_000  # no check of its timer comes within the test
    queue = runtime.settings.worker.queue_name
    try:
        # the dead worker: first in line for the early token, and gone with it
        stolen = asyncio.create_task(thief.blpop([keys.wake(queue)], timeout=10))
        await until_async(lambda: blocked(runtime))
        await host.start()
        await asyncio.sleep(0.3)  # its timer's first look at the queue's jobs for later is over
        store = runtime.store.queue
        elsewhere = Jobs(store.redis, store.blocking, store.scripts, queue, 2.0)  # a web process's: no timer
        due_ms = now_ms() + 1_000
        job = "wh/knower-died"
        assert await elsewhere.enqueue_call(job, EVENT_JOB, (TENANT, "ghost", 1), run_at_ms=due_ms)
        assert (await stolen) == (keys.wake(queue).encode(), WAKE_TOKEN.encode())
        await until_async(done_with(runtime, job), within=2.0)
        assert now_ms() >= due_ms
    finally:
        await host.stop(grace=0.5)
        await thief.aclose()


async def test_a_job_left_with_no_turn_is_found_by_a_read_of_the_queue_under_steady_traffic(
    runtime: Runtime, worker: WorkerHost
) -> None:
    """A job whose turn is gone (its worker died holding it and its mark ran out, or it failed) waits in
    the queue with no token: the worker reads the whole queue every `read_every` however many tokens come
    (steady traffic never leaves it FALLBACK_WAITS empty waits)."""
    await waiting_for_a_token(runtime)
    loop = worker.worker
    loop.read_every = 1.0  # the shipped 30 s (15 waits of 2 s) is too long for a test
    redis, queue = runtime.store.redis, runtime.store.jobs.queue_name
    job = keys.event_job_id(TENANT, "stranded")
    data = serialize_job(EVENT_JOB, (TENANT, "stranded", 1), {}, None, now_ms(), serializer=job_serializer)
    traffic = Traffic(runtime)
    streaming = asyncio.create_task(traffic.run(4.0))
    await asyncio.sleep(0.2)
    await redis.psetex(keys.arq_job(job), 86_400_000, data)
    await redis.zadd(queue, {job: now_ms()})

    async def done() -> bool:
        return not await redis.exists(keys.arq_job(job))

    assert await until_async(done, within=3.5, interval=0.02)
    assert not streaming.done()  # while the traffic still flowed
    await streaming
    assert traffic.queued > 50
