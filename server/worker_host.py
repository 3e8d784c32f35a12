"""An arq worker inside a process that owns a Runtime: a worker process, or a web process (embedded). The
worker is waking_worker.py's, woken for its jobs (their tokens) rather than polling.

Shutdown is ours, not arq's: stop taking jobs, give running ones a grace period, then cancel the rest,
which hands each back to the queue (server/runner/jobs.py), before the pools close.
While its poll loop runs, the host beats (server.store.heartbeats), so /readyz can tell when nobody
consumes the queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from redis.exceptions import RedisError

from .runner.due_jobs import DueJobs
from .runner.loops import first_pause, supervise
from .runtime import Runtime
from .store import heartbeats
from .store.jobs import job_deserializer, job_serializer
from .store.outage import UNAVAILABLE
from .waking_worker import FALLBACK_WAITS, WakingWorker
from .worker_jobs import FUNCTIONS, webhook_mark_ms

log = logging.getLogger(__name__)


class WorkerHost:
    def __init__(self, runtime: Runtime) -> None:
        settings = runtime.settings.worker
        self.runtime = runtime
        self.worker = WakingWorker(
            jobs=runtime.store.jobs,
            webhook_in_progress_ms=webhook_mark_ms(runtime.settings.webhooks),
            functions=FUNCTIONS,
            redis_pool=runtime.store.queue.redis,
            queue_name=settings.queue_name,
            handle_signals=False,
            max_jobs=settings.max_jobs,
            poll_delay=settings.poll_delay_ms / 1000,
            ctx={"runtime": runtime},
            job_serializer=job_serializer,
            job_deserializer=job_deserializer,
            health_check_interval=30,
        )
        #: jobs queued for later get their tokens at their time; it checks as often as the queue is read
        self.due = DueJobs(runtime.store.jobs, FALLBACK_WAITS * settings.poll_delay_ms / 1000)
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
        # this process's jobs for later (webhook retries its deliveries queue) set the timer at once
        self.runtime.store.jobs.on_deferred = self.due.note
        timer = supervise("deferred jobs' timer", self.due.run, self.runtime.outage, pause=0.5)
        self.tasks = [
            asyncio.create_task(self._supervise()),
            asyncio.create_task(self._beat()),
            asyncio.create_task(timer),
        ]

    async def _beat_once(self) -> None:
        settings = self.runtime.settings.worker
        began = time.monotonic()
        try:
            tidy = self.beats % heartbeats.TIDY_EVERY == 0
            await heartbeats.beat(
                self.runtime.store.queue.redis,
                settings.queue_name,
                self.name,
                settings.heartbeat_seconds,
                tidy=tidy,
            )
            self.beats += 1
            self.runtime.outage.answered()
        except UNAVAILABLE as exc:
            self.runtime.outage.failed("worker heartbeat", exc, began=began)

    async def _beat(self) -> None:
        interval = self.runtime.settings.worker.heartbeat_seconds
        # the first pause is shorter, to beat out of step with workers started together (loops.py)
        wait = first_pause(interval)
        while True:
            await asyncio.sleep(wait)
            wait = interval
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
        if self.due.next_job is not None:
            # the job this worker's timer would have woken for: the worker that takes its token hears of
            # it (once this one's poll loop is over, so that it does not take the token itself)
            with contextlib.suppress(RedisError, OSError):
                await self.runtime.store.jobs.hand_back_token(self.due.next_job)

    async def _leave(self) -> None:
        if self.runtime.store.jobs.on_deferred == self.due.note:
            self.runtime.store.jobs.on_deferred = None
        for task in self.tasks[1:]:
            task.cancel()  # no more beats nor tokens for due jobs: this worker takes no new jobs
        with contextlib.suppress(RedisError, OSError):
            await heartbeats.leave(
                self.runtime.store.queue.redis, self.runtime.settings.worker.queue_name, self.name
            )
