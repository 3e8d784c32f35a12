"""The reaper in-process: a run whose process is lost is ended by another process's reaper, with the
output its log holds, which is what its clients saw.

The lost process is a second runtime on the same Redis whose run is cut off the way a kill cuts it: its
task ends without settling anything and the process's loops stop, so its lease is never renewed again.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import redis.asyncio as aioredis

from server.launch.redis_process import RedisProcess
from server.protocol import lifecycle
from server.protocol import status as st
from server.runner.reaper import LOST_SERVER
from server.runtime import Runtime
from server.store import keys
from server.store.turns import WAKE_TOKEN
from server.worker_host import WorkerHost

from ..conftest import RUNTIME_CONFIG
from ..inproc import write_settings
from ..waiting import until_async
from .harness import Frames, ScriptedBackend, reply_of, steps_text, stream_of

TENANT = "tenant-reaper"


async def kill(process: Runtime) -> None:
    """What a SIGKILL leaves behind: the runs stop where they are, nothing is settled or renewed."""
    for handle in list(process.registry.runs.values()):
        assert handle.task is not None
        handle.task.cancel()  # no reason given: the runner re-raises and settles nothing
        await asyncio.gather(handle.task, return_exceptions=True)
    await process.close()


async def test_a_lost_foreground_run_fails_with_what_its_log_holds(
    runtime: Runtime, scripted: ScriptedBackend, private_redis: RedisProcess, tmp_path: Path
) -> None:
    doomed = await Runtime.open(write_settings(tmp_path / "doomed", private_redis.url, RUNTIME_CONFIG))
    doomed.router.builtin[scripted.name] = scripted
    try:
        stream = await stream_of(doomed, TENANT, {"model": "scripted", "input": "hi", "stream": True})
        call = await scripted.next_call()
        call.text("said ", "before ", "dying ")
        await stream.until("step.delta", 3)
        interaction_id = str(stream.events[0]["interaction"]["id"])
        # a follower on the surviving process, from the start
        follower = Frames(runtime.events.frames(await runtime.events.prepare(TENANT, interaction_id, None)))
        await follower.until("step.delta", 3)
    finally:
        await kill(doomed)
    assert await runtime.store.interactions.status(TENANT, interaction_id) in lifecycle.UNFINISHED

    async def failed() -> bool:
        return await runtime.store.interactions.status(TENANT, interaction_id) == st.FAILED

    # the lease (1 s here) runs out, and the surviving process's reaper ends the run
    await until_async(failed, within=10)
    record = await runtime.control.get(TENANT, interaction_id)
    assert record.output is not None and record.output.errors is not None
    assert [(e.code, e.message) for e in record.output.errors] == [("worker_lost", LOST_SERVER)]
    assert steps_text(record.output.steps) == "said before dying " == stream.text()
    events = await follower.rest()
    assert events[-1]["event_type"] == "error" and events[-1]["error"]["code"] == "worker_lost"
    assert follower.text() == "said before dying "
    # a replay from the start tells the same
    replay = Frames(runtime.events.frames(await runtime.events.prepare(TENANT, interaction_id, None)))
    assert [e["event_id"] for e in await replay.rest()] == [e["event_id"] for e in events]
    assert not await runtime.store.runs.due()  # nothing left for a reaper to look at


async def test_a_job_taken_by_a_worker_that_never_claimed_it_is_run_by_another(
    runtime: Runtime, private_redis: RedisProcess, tmp_path: Path
) -> None:
    """A worker's take of a job (take.lua) can land while its reply is lost (a failover, a timeout): that
    worker never claims the run, and the job stays marked in progress for a day. Past the pickup deadline
    (1 s here) the reaper hands it to another worker."""
    interaction_id = (
        await reply_of(runtime, TENANT, {"model": "echo", "input": "hi", "background": True})
    ).interaction.id
    assert interaction_id
    # the take lands, and nothing more is heard of the worker that sent it
    assert await runtime.store.jobs.take(keys.job_id(TENANT, interaction_id, 0), 86_400_000) is not None
    host = WorkerHost(runtime)
    await host.start()
    try:

        async def completed() -> bool:
            return await runtime.store.interactions.status(TENANT, interaction_id) == st.COMPLETED

        await until_async(completed, within=10)
    finally:
        await host.stop(grace=0.5)
    assert not await runtime.store.runs.due()


async def test_a_queued_job_whose_token_died_with_a_worker_gets_another(
    runtime: Runtime, private_redis: RedisProcess
) -> None:
    """A worker pops a token, then takes a turn: one that dies in between takes the token with it, and
    the job waits its turn with no token to wake a worker for it, where only a worker's full read of the
    queue (after 15 empty waits for tokens) or another job's token would find it. Past its pickup deadline
    the reaper gives it another turn, with a token (the worker's side of it: tests/runner/
    test_worker_wake.py)."""
    interaction_id = (
        await reply_of(runtime, TENANT, {"model": "echo", "input": "hi", "background": True})
    ).interaction.id
    assert interaction_id
    queue = runtime.settings.worker.queue_name
    job, tokens = keys.job_id(TENANT, interaction_id, 0), keys.wake(queue)
    redis = aioredis.Redis.from_url(private_redis.url)
    try:
        assert await redis.lrem(tokens, 0, WAKE_TOKEN) == 1  # popped by a worker that died with it

        async def woken() -> bool:
            return WAKE_TOKEN.encode() in await redis.lrange(tokens, 0, -1)

        await until_async(woken, within=10)
        # listed again (a worker that takes it passes over the other listing)
        listed = await redis.lrange(keys.waiting(queue, TENANT), 0, -1)
        assert len(listed) >= 2 and set(listed) == {job.encode()}
    finally:
        await redis.aclose()
    assert await runtime.store.jobs.waiting(TENANT, interaction_id, 0)
