"""A worker's loop over the queue's jobs: woken by a token, it takes the next tenant's turn, and runs it.

It takes arq's jobs when woken, rather than reading the queue every few milliseconds: each queued job
leaves one token, which one idle worker takes with a blocking pop, so a job wakes one worker, not all of
them (a pub/sub wake-up did: with 50 idle workers, pickup p99 was 102 ms). The woken worker takes the next
tenant's next job in one round trip (store/turns.py: the tenants with jobs waiting take turns, so one
tenant's backlog holds another's job back by one turn) and runs it (`JobLoop._run`): from the token to the
run's claim, two round trips where arq's own path (read the queue, watch and mark the job, fetch it) made
seven. A worker whose take says more jobs wait takes the next at once, with no token (the tokens are
capped); one whose slots are all taken takes no token (another worker gets the job) and takes the next
turn when a slot frees, or, if no tenant's job waits, reads the queue. A token taken by a worker that died
before taking a job is covered by a read of the queue every FALLBACK_WAITS waits without one (and as often
when tokens never stop coming), and by the reaper, which gives a run's job nobody took another turn. A
token of the version before names its job, which is taken as it was.

A taken job is marked in progress for its kind's time (store/jobs.py KINDS); a trigger's fire renews its
short mark while it runs, so that a fire whose worker was killed is taken again within about a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from arq.jobs import DeserializationError, deserialize_job_raw

from ..observability import metrics
from ..store.jobs import FIRE_MARK_MS, FIRE_RETRY_MS, JOB_NAME, Jobs, job_deserializer, mark_of
from ..store.outage import UNAVAILABLE
from ..store.turns import Marks, Turns, Wake, woken_by
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
        self.turns = Turns(jobs, Marks(attempt=attempt_mark_ms))
        #: the last turn taken said that tenants' jobs wait still: the next is taken without a token
        self.more = False
        #: False once the worker stops: it takes no more jobs
        self.taking = True
        #: the jobs taken and not yet forgotten (a finished one is forgotten at the next job or read)
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.running = 0
        self.slot_freed = asyncio.Event()
        self.next_wait = first_pause(poll_delay_s)
        #: the whole queue is read at least this often, however busy (the tokens of steady traffic never
        #: leave FALLBACK_WAITS empty waits): a job with no turn left (its worker died holding it, or a
        #: webhook's job failed) is found there
        self.read_every = FALLBACK_WAITS * poll_delay_s
        self.last_read = time.monotonic()

    async def main(self) -> None:
        """Take and run jobs until the worker stops; then wait (the running jobs end or are cancelled, and
        this with them). A Redis error ends it, and its supervisor runs it again (worker_host.py)."""
        # a turn first: jobs may wait whose tokens went beyond the cap or with a worker that died
        self.more = True
        while self.taking:
            # the whole queue: at start, after FALLBACK_WAITS empty waits, and once a slot of a full worker
            # frees while no tenant's job waits its turn (a job an older version queued, a lost turn)
            await self.read_queue()
            while (wake := await self._wait_for_work()) is not None:
                if not self.taking:
                    # this worker is stopping (WorkerHost.stop): the token is for another one
                    if wake.token is not None:
                        await self.jobs.hand_back_token(wake.token)
                    break
                if wake.named is not None:
                    # a token of the version before names its job: that one, with no read of the queue
                    await self.start([wake.named])
                elif not await self._take_turn(woken=wake.token is not None) and wake.freed:
                    break
                self._forget_finished()
                if time.monotonic() - self.last_read > self.read_every:
                    break
        await asyncio.get_running_loop().create_future()

    async def read_queue(self) -> None:
        """Start the queued jobs due now, as many as the free slots take."""
        if self.taking and self.running < self.max_jobs:
            self.last_read = time.monotonic()
            await self.start(await self.jobs.ready(_READ_AT_ONCE))
        self._forget_finished()

    async def _wait_for_work(self) -> Wake | None:
        """What to take next, or None when the queue is to be read instead."""
        empty = 0
        while empty < FALLBACK_WAITS and self.taking:
            if self.running >= self.max_jobs:
                # every slot taken: a token is for a worker that can start the job
                self.slot_freed.clear()
                await self.slot_freed.wait()
                return Wake(freed=True)
            if self.more:
                return Wake()
            # the first wait is shorter, to wait out of step with workers started together (loops.py)
            token = await self.jobs.next_wake(self.next_wait)
            self.next_wait = self.poll_delay_s
            if token is not None:
                return woken_by(token)
            empty += 1
        return None

    async def _take_turn(self, *, woken: bool) -> bool:
        """Take the next tenant's next job in one round trip (store/turns.py) and run it, in a slot that is
        free (`_wait_for_work` saw to it); whether a job was taken or tenants' jobs wait."""
        self.running += 1
        try:
            turn = await self.turns.take(woken=woken)
        except BaseException:
            self._slot_freed()  # Redis failed: the slot is free again
            raise
        if turn.data is None or not self._begin(turn.job, turn.data):
            self._slot_freed()  # none taken, or one this worker runs already
        self.more = turn.more
        return turn.job is not None or turn.more

    async def start(self, job_ids: list[str]) -> None:
        """Each job checked, marked in progress and read by one script (store/jobs.py `take`), then run."""
        for job_id in job_ids:
            if self.running >= self.max_jobs:
                return
            if self._running_here(job_id):
                continue
            self.running += 1
            data: bytes | None = None
            try:
                data = await self.jobs.take(job_id, self.mark_ms(job_id))
            finally:
                if data is None:
                    # not taken (another worker has it, or Redis failed): the slot is free again
                    self._slot_freed()
            if data is not None:
                self._begin(job_id, data)

    def _running_here(self, job_id: str) -> bool:
        """Whether this worker runs the job already (its mark ran out, its token or turn came again)."""
        return job_id in self.tasks and not self.tasks[job_id].done()

    def _begin(self, job_id: str | None, data: bytes) -> bool:
        """Run a job taken in a slot of this worker's; False for one it runs already (the slot is free)."""
        if job_id is None or self._running_here(job_id):
            return False
        task = asyncio.create_task(self._run(job_id, data))
        task.add_done_callback(lambda _: self._slot_freed())
        self.tasks[job_id] = task
        return True

    def _slot_freed(self) -> None:
        self.running -= 1
        self.slot_freed.set()

    def mark_ms(self, job_id: str) -> int:
        """How long a taken job is marked as this worker's, by its kind (store/jobs.py KINDS): a short
        mark lets another worker take it again soon after this one died mid-job (a deletion taken twice
        deletes nothing twice, a trigger's time fired twice makes one execution)."""
        return self.turns.marks.of(job_id)

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
