"""The job queue (arq): everything this server knows of arq's keys and jobs is here.

A background interaction is run by a job named by (tenant, id, fence): a new fence, a new job, so a job
re-delivered after its run moved on is told apart (claim.lua refuses it as stale).
"""

from __future__ import annotations

import asyncio
from typing import Final

import msgspec
from arq.connections import ArqRedis
from redis.asyncio import Redis

from . import keys
from .commands import typed
from .scripts import Scripts

JOB_NAME: Final = "run_interaction"


def job_serializer(job: dict[str, object]) -> bytes:
    # arq pickles by default; a job here is names and numbers only
    return msgspec.msgpack.encode(job)


def job_deserializer(data: bytes) -> dict[str, object]:
    job: dict[str, object] = msgspec.msgpack.decode(data)
    return job


#: wake-up tokens kept for jobs no idle worker took yet (each costs a worker one read of the queue)
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
        # arq queues in a transaction (a pipeline), which the client's per-command bound does not cover
        async with asyncio.timeout(self.timeout):
            await self.redis.enqueue_job(
                JOB_NAME,
                tenant,
                interaction_id,
                fence,
                _job_id=keys.job_id(tenant, interaction_id, fence),
                _queue_name=self.queue_name,
            )
            # one idle worker waits for this rather than polling the queue (server/worker_host.py)
            await self.scripts.wake(keys=[keys.wake(self.queue_name)], args=[_MAX_TOKENS])

    async def next_wake(self, seconds: float) -> bool:
        """Wait up to `seconds` for a queued job's token (a blocking pop: one job, one worker)."""
        return await self.blocking.blpop([keys.wake(self.queue_name)], timeout=seconds) is not None

    async def waiting(self, tenant: str, interaction_id: str, fence: int) -> bool:
        """Whether the job for this fence is still in arq's queue, not yet taken by a worker."""
        job = keys.job_id(tenant, interaction_id, fence)
        queued = await self.commands.exists(keys.arq_job(job))
        taken = await self.commands.exists(keys.arq_in_progress(job))
        return bool(queued) and not taken
