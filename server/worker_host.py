"""A worker inside a process that owns a Runtime: a worker process, or a web process (embedded).

It runs the job loop (runner/job_loop.py: woken by a token, the next tenant's job taken and run), the
timer of the jobs queued for later (runner/due_jobs.py), so that a job for later runs at its time whether
the queue is idle or busy, and the heartbeats (server.store.heartbeats), so that /readyz can tell when
nobody consumes the queue. Shutdown is ours: stop taking jobs, give running ones a grace period, then
cancel the rest, which hands each back to the queue (server/runner/jobs.py), before the pools close.

arq stays the queue's format, not its worker: its jobs (arq.jobs.serialize_job and deserialize_job_raw),
its keys (arq.constants) and its client (ArqRedis) are used as they are (store/jobs.py), so arq's own tools
read and queue our jobs; its Worker class is not used. This host once subclassed it and replaced its poll
loop, its start of a job and its run of one (the measured wake-ups of job_loop.py), leaning on its private
parts (`_poll_iteration`, `_release_sem_dec_counter_on_complete`, the `sem`, `job_counter`, `tasks` and
`allow_pick_jobs` it keeps); its public hooks (on_startup, on_job_start, on_job_end, after_job_end) are
called only from the main loop and run_job that were replaced, so none of them could take their place.
What is left of arq has no underscore, but arq documents neither its constants nor its raw
(de)serializers: `tests/test_arq_private.py` lists each name with its signature or value, and fails, naming
what to review, when arq's version moves from the pinned one or any of them changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from redis.exceptions import RedisError

from .runner.due_jobs import DueJobs
from .runner.job_loop import FALLBACK_WAITS, JobLoop
from .runner.loops import first_pause, supervise
from .runtime import Runtime
from .store import heartbeats
from .store.outage import UNAVAILABLE
from .worker_jobs import FUNCTIONS, webhook_mark_ms

log = logging.getLogger(__name__)


class WorkerHost:
    def __init__(self, runtime: Runtime) -> None:
        settings = runtime.settings.worker
        self.runtime = runtime
        self.worker = JobLoop(
            runtime.store.jobs,
            FUNCTIONS,
            {"runtime": runtime},
            max_jobs=settings.max_jobs,
            poll_delay_s=settings.poll_delay_ms / 1000,
            attempt_mark_ms=webhook_mark_ms(runtime.settings.webhooks),
        )
        #: jobs queued for later get their tokens at their time; it checks as often as the queue is read
        self.due = DueJobs(runtime.store.jobs, FALLBACK_WAITS * settings.poll_delay_ms / 1000)
        self.name = heartbeats.worker_name()
        self.polling = False
        self.beats = 0
        self.tasks: list[asyncio.Task[None]] = []

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
        """The job loop ends on the first Redis error; it is run again until the host stops."""
        await supervise("worker poll loop", self._poll, self.runtime.outage, pause=0.5)

    async def _poll(self) -> None:
        self.polling = True
        try:
            await self.worker.main()
        finally:
            self.polling = False

    async def stop(self, grace: float | None = None) -> None:
        grace = self.runtime.settings.worker.shutdown_grace_seconds if grace is None else grace
        self.worker.taking = False
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
