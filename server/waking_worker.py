"""arq's worker, woken for its jobs rather than polling: the worker of a WorkerHost (worker_host.py).

It takes arq's jobs when woken, rather than reading the queue every few milliseconds: each queued job
leaves one token, which one idle worker takes with a blocking pop, so a job wakes one worker, not all of
them (a pub/sub wake-up did: with 50 idle workers, pickup p99 was 102 ms). The woken worker takes the next
tenant's next job in one round trip (store/turns.py, the tenants' turns) and runs it (`WakingWorker._run`):
from the token to the run's claim, two round trips where arq's own path (read the queue, watch and mark the
job, fetch it) made seven. A worker whose take says more jobs wait takes the next at once, with no token;
one whose slots are all taken takes no token (another worker gets the job) and takes the next turn when a
slot frees, or, if no tenant's job waits, reads the queue. A token taken by a worker that died before
taking a job is covered by a read of the queue every FALLBACK_WAITS waits without one, and by the reaper,
which gives a job nobody took another turn. A job queued for later gets its turn again at its due time,
from a worker's timer (runner/due_jobs.py), so it runs then whether the queue is idle or busy.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from arq.jobs import DeserializationError, deserialize_job_raw
from arq.worker import Worker

from .observability import metrics
from .runner.loops import first_pause
from .store.jobs import JOB_NAME, Jobs, mark_of
from .store.turns import Marks, Turns, Wake, woken_by

log = logging.getLogger(__name__)

#: an idle worker reads the queue after this many token waits (of `worker.poll_delay_ms`) came back empty
FALLBACK_WAITS = 15


class WakingWorker(Worker):
    """arq's worker with its fixed-delay poll loop replaced by one that waits for a job's token and takes
    that job, and its start and run of a job replaced by one script and `_run`."""

    def __init__(self, *args: Any, jobs: Jobs, webhook_in_progress_ms: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.jobs = jobs
        self.slot_freed = asyncio.Event()
        self.turns = Turns(
            jobs, Marks(run=int(self.in_progress_timeout_s * 1000), attempt=webhook_in_progress_ms)
        )
        self.next_wait = first_pause(self.poll_delay_s)
        #: the last turn taken said that tenants' jobs wait still: the next is taken without a token
        self.more = False

    async def main(self) -> None:
        # arq's main() without its loop; the pool is ours (given), and no startup hook is used
        self.ctx["redis"] = self.pool
        # a turn first: jobs may wait whose tokens went beyond the cap or with a worker that died
        self.more = True
        while self.allow_pick_jobs:
            # the whole queue: at start, after FALLBACK_WAITS empty waits, and once a slot of a full worker
            # frees while no tenant's job waits its turn (a job an older version queued, a lost turn)
            await self._poll_iteration()
            while (wake := await self._wait_for_work()) is not None:
                if not self.allow_pick_jobs:
                    # this worker is stopping (WorkerHost.stop): the token is for another one
                    if wake.token is not None:
                        await self.jobs.hand_back_token(wake.token)
                    break
                if wake.named is not None:
                    # a token of the version before names its job: that one, with no read of the queue
                    await self.start_jobs([wake.named.encode()])
                elif not await self._take_turn(woken=wake.token is not None) and wake.freed:
                    break
                self._forget_finished()
        # stopping: the running jobs finish or are cancelled, and this loop with them
        await asyncio.get_running_loop().create_future()

    async def _poll_iteration(self) -> None:
        """arq's read of the whole queue, which also re-raises each finished job's error here: a job
        cancelled as its worker stops re-raises its CancelledError, which must not end this loop while
        the worker goes on (a loop ended so takes no more jobs and, not polling, no longer beats)."""
        try:
            await super()._poll_iteration()
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling() > 0:
                raise
            log.error("a job ended cancelled while its worker goes on; its worker keeps polling")

    async def _wait_for_work(self) -> Wake | None:
        """What to take next, or None when the queue is to be read instead."""
        empty = 0
        while empty < FALLBACK_WAITS and self.allow_pick_jobs:
            if self.job_counter >= self.max_jobs:
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
        await self.sem.acquire()
        self.job_counter += 1
        turn = None
        try:
            turn = await self.turns.take(woken=woken)
        finally:
            if turn is None or turn.data is None:
                self.job_counter -= 1
                self.sem.release()
        self.more = turn.more
        if turn.job is not None and turn.data is not None:
            self._start(turn.job, turn.data)
        return turn.job is not None or turn.more

    async def start_jobs(self, job_ids: list[bytes]) -> None:
        """arq's start_jobs, each job checked, marked in progress and read by one script (store/jobs.py
        `take`) where arq makes five round trips, and run by `_run` rather than arq's run_job."""
        for job_id_b in job_ids:
            await self.sem.acquire()
            if self.job_counter >= self.max_jobs:
                self.sem.release()
                return
            self.job_counter += 1
            job_id = job_id_b.decode()
            data: bytes | None = None
            try:
                data = await self.jobs.take(job_id, self._in_progress_ms(job_id))
            finally:
                if data is None:
                    # not taken (another worker has it, or Redis failed): the slot is free again
                    self.job_counter -= 1
                    self.sem.release()
            if data is not None:
                self._start(job_id, data)

    def _start(self, job_id: str, data: bytes) -> None:
        """Run a job taken in a slot of this worker's."""
        task = asyncio.create_task(self._run(job_id, data))
        task.add_done_callback(lambda _: self._release_sem_dec_counter_on_complete())
        self.tasks[job_id] = task

    def _in_progress_ms(self, job_id: str) -> int:
        """How long a taken job is marked as this worker's, by its kind (store/jobs.py KINDS): a short
        mark lets another worker take it again soon after this one died mid-job (a deletion taken twice
        deletes nothing twice, a trigger's time fired twice makes one execution)."""
        return self.turns.marks.of(job_id)

    async def _run(self, job_id: str, data: bytes) -> None:
        """A taken job, in place of arq's run_job: a run counts its own attempts and holds its own lease
        (claim.lua), so arq's retry count, timeout and result are not kept."""
        try:
            name, args, kwargs, _, enqueued_ms = deserialize_job_raw(data, deserializer=self.job_deserializer)
            function = self.functions[name]
        except (DeserializationError, KeyError):
            log.exception("job %s cannot be run", job_id)
            await self.jobs.finish(job_id)
            return
        if name == JOB_NAME:
            metrics.picked_up(enqueued_ms)
        try:
            await function.coroutine({**self.ctx, "job_id": job_id}, *args, **kwargs)
        except asyncio.CancelledError:
            # the worker is stopping (WorkerHost.stop); its run was handed back or settled first
            # (server/runner/jobs.py), and the job stays queued, as arq leaves a cancelled one
            await asyncio.shield(self.jobs.release(job_id))
            raise
        except Exception:
            log.exception("job %s failed", job_id)
            if mark_of(job_id) != "run":
                # a webhook, deletion or trigger job has no lease of its own to retry it (a Redis outage,
                # say): it stays queued, and is taken again once its short mark runs out (its data lives a
                # day past its due time at most)
                return
        await asyncio.shield(self.jobs.finish(job_id))

    def _forget_finished(self) -> None:
        # what arq's _poll_iteration does after starting jobs: `_run` catches its job's errors, and one
        # Redis failed to finish it with ends the poll loop, which is run again (WorkerHost._supervise);
        # a job cancelled (the worker stopping) is not an error of the loop's: its result would cancel it
        for job_id, task in list(self.tasks.items()):
            if task.done():
                del self.tasks[job_id]
                if not task.cancelled():
                    task.result()

    def _release_sem_dec_counter_on_complete(self) -> None:
        super()._release_sem_dec_counter_on_complete()
        self.slot_freed.set()
