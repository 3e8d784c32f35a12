"""An arq worker inside a process that owns a Runtime: a worker process, or a web process (embedded).

It reads arq's queue when woken, rather than every few milliseconds: each queued job leaves one token
(store/jobs.py), which one idle worker takes with a blocking pop, so a job wakes one worker, not all of
them (a pub/sub wake-up did: with 50 idle workers, pickup p99 was 102 ms). A worker whose slots are all
taken takes no token (another worker gets the job) and reads the queue again when a slot frees. A token
taken by a worker that died before reading the queue is covered by a read every FALLBACK_WAITS waits
without one, and by the reaper, which queues a job nobody took again (with a new token).

Shutdown is ours, not arq's: stop taking jobs, give running ones a grace period, then cancel the rest,
which hands each back to the queue (server/runner/jobs.py), before the pools close.
While its poll loop runs, the host beats (server.store.heartbeats), so /readyz can tell when nobody
consumes the queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from arq.worker import Worker, func
from redis.exceptions import RedisError

from .runner.loops import supervise
from .runtime import Runtime
from .store import heartbeats
from .store.jobs import JOB_NAME, Jobs, job_deserializer, job_serializer
from .store.outage import UNAVAILABLE

log = logging.getLogger(__name__)

#: arq's own job timeout; our lease, not this, detects lost runs
_JOB_TIMEOUT_SECONDS = 24 * 3600


async def run_interaction(ctx: dict[str, Any], tenant: str, interaction_id: str, fence: int) -> None:
    runtime: Runtime = ctx["runtime"]
    await runtime.jobs.run(tenant, interaction_id, fence)


#: an idle worker reads the queue after this many token waits (of `worker.poll_delay_ms`) came back empty
FALLBACK_WAITS = 15


class WakingWorker(Worker):
    """arq's worker with its fixed-delay poll loop replaced by one that waits for a job's token."""

    def __init__(self, *args: Any, jobs: Jobs, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.jobs = jobs
        self.slot_freed = asyncio.Event()

    async def main(self) -> None:
        # arq's main() without its loop; the pool is ours (given), and no startup hook is used
        self.ctx["redis"] = self.pool
        while True:
            await self._poll_iteration()
            await self._wait_for_work()

    async def _wait_for_work(self) -> None:
        empty = 0
        while empty < FALLBACK_WAITS:
            if self.job_counter >= self.max_jobs:
                # every slot taken: a token is for a worker that can start the job
                self.slot_freed.clear()
                await self.slot_freed.wait()
                return
            if await self.jobs.next_wake(self.poll_delay_s):
                return
            empty += 1

    def _release_sem_dec_counter_on_complete(self) -> None:
        super()._release_sem_dec_counter_on_complete()
        self.slot_freed.set()


class WorkerHost:
    def __init__(self, runtime: Runtime) -> None:
        settings = runtime.settings.worker
        self.runtime = runtime
        self.worker = WakingWorker(
            jobs=runtime.store.jobs,
            functions=[func(run_interaction, name=JOB_NAME, timeout=_JOB_TIMEOUT_SECONDS)],
            redis_pool=runtime.store.redis,
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
        self.name = heartbeats.worker_name()
        self.polling = False
        self.beats = 0
        self.tasks: list[asyncio.Task[None]] = []
        # arq logs every job start and end at INFO
        logging.getLogger("arq.worker").setLevel(logging.WARNING)

    async def start(self) -> None:
        """Start polling; the first heartbeat is written before this returns, so a process that says it
        is ready with a worker inside is counted at once."""
        self.polling = True
        await self._beat_once()
        self.tasks = [asyncio.create_task(self._supervise()), asyncio.create_task(self._beat())]

    async def _beat_once(self) -> None:
        settings = self.runtime.settings.worker
        try:
            tidy = self.beats % heartbeats.TIDY_EVERY == 0
            await heartbeats.beat(
                self.runtime.store.redis,
                settings.queue_name,
                self.name,
                settings.heartbeat_seconds,
                tidy=tidy,
            )
            self.beats += 1
            self.runtime.outage.answered()
        except UNAVAILABLE as exc:
            self.runtime.outage.failed("worker heartbeat", exc)

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.runtime.settings.worker.heartbeat_seconds)
            if self.polling:
                await self._beat_once()

    async def _supervise(self) -> None:
        """arq's poll loop ends on the first Redis error; it is run again until the host stops."""
        await supervise("worker poll loop", self._poll, self.runtime.outage, pause=0.5)

    async def _poll(self) -> None:
        self.polling = True
        try:
            await self.worker.main()
        finally:
            self.polling = False

    async def stop(self, grace: float | None = None) -> None:
        grace = self.runtime.settings.worker.shutdown_grace_seconds if grace is None else grace
        self.worker.allow_pick_jobs = False
        await self._leave()
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
        for task in self.tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _leave(self) -> None:
        for task in self.tasks[1:]:
            task.cancel()  # no more beats: this worker takes no new jobs
        with contextlib.suppress(RedisError, OSError):
            await heartbeats.leave(
                self.runtime.store.redis, self.runtime.settings.worker.queue_name, self.name
            )
