"""A worker's loop over the queue's jobs: it takes a job when a token names it, and runs it.

It takes arq's jobs when woken, rather than reading the queue every few milliseconds: each queued job
leaves one token naming it (store/jobs.py), which one idle worker takes with a blocking pop, so a job wakes
one worker, not all of them (a pub/sub wake-up did: with 50 idle workers, pickup p99 was 102 ms). The
woken worker takes that job in one round trip (take.lua) and runs it (`JobLoop._run`): from the token to
the run's claim, two round trips where arq's own path (read the queue, watch and mark the job, fetch it)
made seven, each one more chance to wait for a core behind other processes. A worker whose slots are all
taken takes no token (another worker gets the job) and reads the queue again when a slot frees. A token
taken by a worker that died before taking its job is covered by a read of the queue every FALLBACK_WAITS
waits without one, and by the reaper, which queues a job nobody took again (with a new token).

A taken job is marked in progress for its kind's time (store/jobs.py KINDS); a trigger's fire renews its
short mark while it runs, so that a fire whose worker was killed is taken again within about a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from arq.jobs import DeserializationError, deserialize_job_raw

from ..observability import metrics
from ..store.jobs import (
    FIRE_MARK_MS,
    FIRE_RETRY_MS,
    JOB_NAME,
    RUN_MARK_MS,
    Jobs,
    job_deserializer,
    mark_of,
)
from ..store.outage import UNAVAILABLE
from .loops import first_pause

log = logging.getLogger(__name__)

#: an idle worker reads the queue after this many token waits (of `worker.poll_delay_ms`) came back empty
FALLBACK_WAITS = 15
#: the most jobs one read of the queue starts (arq's own read took max(max_jobs * 5, 100))
_READ_AT_ONCE = 100

#: a job's function: (ctx, *args, **kwargs)
JobFunction = Callable[..., Awaitable[None]]


class JobLoop:
    def __init__(
        self,
        jobs: Jobs,
        functions: Mapping[str, JobFunction],
        ctx: dict[str, Any],
        *,
        max_jobs: int,
        poll_delay_s: float,
        attempt_mark_ms: int,
    ) -> None:
        self.jobs = jobs
        self.functions = functions
        self.ctx = ctx
        self.max_jobs = max_jobs
        self.poll_delay_s = poll_delay_s
        #: a webhook's or a purge's mark in progress (worker_jobs.webhook_mark_ms)
        self.attempt_mark_ms = attempt_mark_ms
        #: False once the worker stops: it takes no more jobs
        self.taking = True
        #: the jobs taken and not yet forgotten (a finished one is forgotten at the next job or read)
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.running = 0
        self.slot_freed = asyncio.Event()
        self.next_wait = first_pause(poll_delay_s)

    async def main(self) -> None:
        """Take and run jobs until the worker stops; then wait (the running jobs end or are cancelled, and
        this with them). A Redis error ends it, and its supervisor runs it again (worker_host.py)."""
        while self.taking:
            # the whole queue: at start, once a slot frees, and after FALLBACK_WAITS empty waits
            await self.read_queue()
            while (job := await self._wait_for_work()) is not None:
                if not self.taking:
                    # this worker is stopping (WorkerHost.stop): the job is for another one
                    await self.jobs.hand_back_token(job)
                    break
                # the token's job, with no read of the queue first (a round trip less)
                await self.start([job])
                self._forget_finished()
        await asyncio.get_running_loop().create_future()

    async def read_queue(self) -> None:
        """Start the queued jobs due now, as many as the free slots take."""
        if self.taking and self.running < self.max_jobs:
            await self.start(await self.jobs.ready(_READ_AT_ONCE))
        self._forget_finished()

    async def _wait_for_work(self) -> str | None:
        """The job named by the next token, or None when the queue is to be read instead."""
        empty = 0
        while empty < FALLBACK_WAITS and self.taking:
            if self.running >= self.max_jobs:
                # every slot taken: a token is for a worker that can start the job
                self.slot_freed.clear()
                await self.slot_freed.wait()
                return None
            # the first wait is shorter, to wait out of step with workers started together (loops.py)
            token = await self.jobs.next_wake(self.next_wait)
            self.next_wait = self.poll_delay_s
            if token is not None:
                # a job id is "tenant/id/fence"; an older version's token ("1") names no job
                return token if "/" in token else None
            empty += 1
        return None

    async def start(self, job_ids: list[str]) -> None:
        """Each job checked, marked in progress and read by one script (store/jobs.py `take`), then run."""
        for job_id in job_ids:
            if self.running >= self.max_jobs:
                return
            if job_id in self.tasks and not self.tasks[job_id].done():
                continue  # this worker runs it already (its mark ran out, its token came again)
            self.running += 1
            data: bytes | None = None
            try:
                data = await self.jobs.take(job_id, self.mark_ms(job_id))
            finally:
                if data is None:
                    # not taken (another worker has it, or Redis failed): the slot is free again
                    self._slot_freed()
            if data is not None:
                task = asyncio.create_task(self._run(job_id, data))
                task.add_done_callback(lambda _: self._slot_freed())
                self.tasks[job_id] = task

    def _slot_freed(self) -> None:
        self.running -= 1
        self.slot_freed.set()

    def mark_ms(self, job_id: str) -> int:
        """How long a taken job is marked as this worker's, by its kind (store/jobs.py KINDS): a short
        mark lets another worker take it again soon after this one died mid-job (a deletion taken twice
        deletes nothing twice, a trigger's time fired twice makes one execution)."""
        mark = mark_of(job_id)
        if mark == "fire":
            return FIRE_MARK_MS
        return self.attempt_mark_ms if mark == "attempt" else RUN_MARK_MS

    async def _run(self, job_id: str, data: bytes) -> None:
        """A taken job, in place of arq's run_job: a run counts its own attempts and holds its own lease
        (claim.lua), so arq's retry count, timeout and result are not kept."""
        try:
            name, args, kwargs, _, enqueued_ms = deserialize_job_raw(data, deserializer=job_deserializer)
            function = self.functions[name]
        except (DeserializationError, KeyError):
            log.exception("job %s cannot be run", job_id)
            await self.jobs.finish(job_id)
            return
        if name == JOB_NAME:
            metrics.picked_up(enqueued_ms)
        try:
            async with self._renewed(job_id):
                await function({**self.ctx, "job_id": job_id}, *args, **kwargs)
        except asyncio.CancelledError:
            # the worker is stopping (WorkerHost.stop); its run was handed back or settled first
            # (server/runner/jobs.py), and the job stays queued, as arq leaves a cancelled one
            await asyncio.shield(self.jobs.release(job_id))
            raise
        except Exception as exc:
            log.exception("job %s failed", job_id)
            if mark_of(job_id) != "run":
                # a webhook, deletion or trigger job has no lease of its own to retry it (a Redis outage,
                # say): it stays queued, and is taken again once its mark runs out (its data lives a day
                # past its due time at most)
                await self._failed(job_id, exc)
                return
        await asyncio.shield(self.jobs.finish(job_id))

    @contextlib.asynccontextmanager
    async def _renewed(self, job_id: str) -> AsyncIterator[None]:
        """A fire's short mark renewed every third of it while the job runs (the others' last it out)."""
        if mark_of(job_id) != "fire":
            yield
            return
        renewing = asyncio.create_task(self._renew(job_id))
        try:
            yield
        finally:
            renewing.cancel()

    async def _renew(self, job_id: str) -> None:
        while True:
            await asyncio.sleep(FIRE_MARK_MS / 3000)
            # a renewal lost (Redis away) lets another worker take the fire too, which is no harm
            with contextlib.suppress(*UNAVAILABLE):
                await self.jobs.hold(job_id, FIRE_MARK_MS)

    async def _failed(self, job_id: str, exc: Exception) -> None:
        """A fire's short mark would retry a fire that fails every time (a bug) twice a second: it is held
        for FIRE_RETRY_MS instead. One cut short by Redis is retried once its mark runs out, as soon as
        Redis answers again."""
        if mark_of(job_id) == "fire" and not isinstance(exc, UNAVAILABLE):
            with contextlib.suppress(*UNAVAILABLE):
                await self.jobs.hold(job_id, FIRE_RETRY_MS)

    def _forget_finished(self) -> None:
        """`_run` catches its job's errors, and one Redis failed to finish it with ends the loop, which is
        run again (WorkerHost._supervise); a job cancelled (the worker stopping) is not an error of the
        loop's: its result would cancel it."""
        for job_id, task in list(self.tasks.items()):
            if task.done():
                del self.tasks[job_id]
                if not task.cancelled():
                    task.result()
