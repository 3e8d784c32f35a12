"""An arq worker inside a process that owns a Runtime: a worker process, or a web process (embedded).

Shutdown is ours, not arq's: stop taking jobs, give running ones a grace period, then cancel the rest,
which hands each back to the queue (server.runner.service.run_background), before the pools close.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from arq.worker import Worker, func
from redis.exceptions import RedisError

from server.runtime import JOB_NAME, Runtime, job_deserializer, job_serializer

log = logging.getLogger(__name__)

#: arq's own job timeout; our lease, not this, detects lost runs
_JOB_TIMEOUT_SECONDS = 24 * 3600


async def run_interaction(ctx: dict[str, Any], tenant: str, interaction_id: str, fence: int) -> None:
    runtime: Runtime = ctx["runtime"]
    await runtime.service.run_background(tenant, interaction_id, fence)


class WorkerHost:
    def __init__(self, runtime: Runtime) -> None:
        settings = runtime.settings.worker
        self.runtime = runtime
        self.worker = Worker(
            functions=[func(run_interaction, name=JOB_NAME, timeout=_JOB_TIMEOUT_SECONDS)],
            redis_pool=runtime.redis,
            queue_name=settings.queue_name,
            handle_signals=False,
            max_jobs=settings.max_jobs,
            poll_delay=settings.poll_delay_ms / 1000,
            keep_result=0,
            max_tries=3,
            ctx={"runtime": runtime},
            job_serializer=job_serializer,
            job_deserializer=job_deserializer,
            health_check_interval=30,
            log_results=False,
        )
        self.task: asyncio.Task[None] | None = None
        # arq logs every job start and end at INFO
        logging.getLogger("arq.worker").setLevel(logging.WARNING)

    def start(self) -> None:
        self.task = asyncio.create_task(self._supervise())

    async def _supervise(self) -> None:
        """arq's poll loop ends on the first Redis error; run it again until we stop."""
        while True:
            try:
                await self.worker.main()
                return
            except asyncio.CancelledError:
                raise
            except RedisError as exc:
                log.warning("worker lost Redis (%s); polling again in 0.5s", exc)
            except Exception:
                log.exception("worker loop failed; polling again in 0.5s")
            await asyncio.sleep(0.5)

    async def stop(self, grace: float | None = None) -> None:
        grace = self.runtime.settings.worker.shutdown_grace_seconds if grace is None else grace
        self.worker.allow_pick_jobs = False
        running = [t for t in self.worker.tasks.values() if not t.done()]
        if running:
            log.info("waiting up to %.0fs for %d running jobs", grace, len(running))
            await asyncio.wait(running, timeout=grace)
        for task in running:
            if not task.done():
                task.cancel()
        for task in running:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task
