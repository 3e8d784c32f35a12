"""The job queue (arq): everything this server knows of arq's keys and jobs is here.

A background interaction is run by a job named by (tenant, id, fence): a new fence, a new job, so a job
re-delivered after its run moved on is told apart (claim.lua refuses it as stale).
"""

from __future__ import annotations

from typing import Final

import msgspec
from arq.connections import ArqRedis
from arq.constants import expires_extra_ms, result_key_prefix, retry_key_prefix
from arq.jobs import serialize_job
from redis.asyncio import Redis

from ..observability import context, spans
from . import keys
from .commands import now_ms, typed
from .scripts import Scripts

JOB_NAME: Final = "run_interaction"


def job_serializer(job: dict[str, object]) -> bytes:
    # arq pickles by default; a job here is names and numbers only
    return msgspec.msgpack.encode(job)


def job_deserializer(data: bytes) -> dict[str, object]:
    job: dict[str, object] = msgspec.msgpack.decode(data)
    return job


#: wake-up tokens kept for jobs no idle worker took yet (each costs a worker one `take`)
_MAX_TOKENS = 1000


class Jobs:
    def __init__(
        self, redis: ArqRedis, blocking: Redis, scripts: Scripts, queue_name: str, timeout: float
    ) -> None:
        self.redis = redis
        self.commands = typed(redis)
        self.blocking = typed(blocking)
        self.scripts = scripts
        self.queue_name = queue_name
        self.timeout = timeout

    async def enqueue(self, tenant: str, interaction_id: str, fence: int) -> None:
        """Queue the job as arq would, and leave a token naming it for one idle worker (wake.lua): one
        round trip, where arq's enqueue and a separate token took four."""
        job = keys.job_id(tenant, interaction_id, fence)
        now = now_ms()
        # the request that queued it (none for a reaper's requeue): the run's logs and upstream call name it
        request_id = context.request_id()
        kwargs: dict[str, object] = {"request_id": request_id} if request_id else {}
        with spans.enqueue(self.queue_name, job, interaction_id) as trace:
            if trace:
                # the trace it is queued in, which the worker's run continues (tracing on only)
                kwargs["trace"] = trace
            data = serialize_job(
                JOB_NAME, (tenant, interaction_id, fence), kwargs, None, now, serializer=job_serializer
            )
            names = [keys.arq_job(job), result_key_prefix + job, self.queue_name, keys.wake(self.queue_name)]
            await self.scripts.wake(keys=names, args=[job, data, now, expires_extra_ms, _MAX_TOKENS])

    async def next_wake(self, seconds: float) -> str | None:
        """Wait up to `seconds` for a queued job's token (a blocking pop: one job, one worker); the token
        names the job (a token of an older version names none: read the queue then)."""
        token = await self.blocking.blpop([keys.wake(self.queue_name)], timeout=seconds)
        return None if token is None else token[1].decode()

    async def hand_back_token(self, job: str) -> None:
        """Put back a token this worker took but will not act on (it is stopping), for another worker."""
        await self.commands.rpush(keys.wake(self.queue_name), job)

    async def take(self, job: str, in_progress_ms: int) -> bytes | None:
        """Mark a queued job as taken by this worker and read it (take.lua); None if it is not there to
        take (another worker has it, it is gone, or deferred)."""
        data: bytes | None = await self.scripts.take(
            keys=[self.queue_name, keys.arq_job(job), keys.arq_in_progress(job)],
            args=[job, now_ms(), in_progress_ms],
        )
        return data

    async def finish(self, job: str) -> None:
        """A job ran (or cannot run): out of the queue first, so that no worker takes it between the two
        commands, then its keys (arq's retry count too, kept by workers of older versions)."""
        await self.commands.zrem(self.queue_name, job)
        await self.commands.delete(keys.arq_job(job), keys.arq_in_progress(job), retry_key_prefix + job)

    async def release(self, job: str) -> None:
        """A job this worker stopped running stays queued for another, as arq leaves a cancelled job."""
        await self.commands.delete(keys.arq_in_progress(job))

    async def waiting(self, tenant: str, interaction_id: str, fence: int) -> bool:
        """Whether the job for this fence is still in arq's queue, not yet taken by a worker."""
        job = keys.job_id(tenant, interaction_id, fence)
        queued = await self.commands.exists(keys.arq_job(job))
        taken = await self.commands.exists(keys.arq_in_progress(job))
        return bool(queued) and not taken
