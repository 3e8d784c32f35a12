"""The background job (what a worker runs for a queued interaction) and handing a run back to the queue.

A job is named by the fence it was queued under: the claim takes a new fence, so a job re-delivered after
its run moved on is refused as stale and does nothing. A worker shutting down hands back a run that made
no output yet (a re-run repeats nothing anyone saw), or whose turn is a remote run (a re-run follows it and
shows only what is new); any other settles as failed with its output.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

from ..errors import AttemptsExhausted, NotFound, RequestError, StoreConflict
from ..protocol.interaction import ErrorInfo
from ..protocol.lifecycle import Event as Move
from ..protocol.steps import Step
from ..store import keys
from ..store.runs import Claim
from . import assemble
from .handle import CANCELLED, SHUTDOWN, RunHandle
from .log_sink import LogSink
from .retried import through_outage
from .services import UseCase
from .sinks import RunResult
from .spec import RunSpec, upstream_request

log = logging.getLogger(__name__)

LOST_WORKER: Final = "The worker running this interaction was lost"

T = TypeVar("T")


class BackgroundJobs(UseCase):
    async def run(self, tenant: str, interaction_id: str, queued_fence: int) -> None:
        """The worker's job. Returns at once if the interaction is finished or the job is stale."""
        start = f"the start of interaction {interaction_id}"
        try:
            claim = await self._retried(
                functools.partial(self.store.runs.claim, tenant, interaction_id, queued_fence), start
            )
        except AttemptsExhausted:
            error = ErrorInfo(code="worker_lost", message=LOST_WORKER)
            await self.settler.settle_without_run(tenant, interaction_id, Move.LOSE, error)
            return
        except (StoreConflict, NotFound):
            return
        generation = self.histories.generation(tenant)
        try:
            spec = await self._retried(
                functools.partial(self._spec, tenant, interaction_id, claim, generation), start
            )
        except RequestError as exc:
            error = ErrorInfo(code="failed", message=str(exc))
            await self.settler.settle_without_run(tenant, interaction_id, Move.FAIL, error)
            return
        handle = RunHandle(keys.member(tenant, interaction_id))
        sink = LogSink(
            spec, self.store, self.writer, self.histories, handle, listener=None, generation=generation
        )
        task = self.registry.start(handle, self.runner.run(spec, handle, sink))
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling() == 0:
                # not this job's cancel (a worker stopping) but its run's, before the run's first step,
                # so the runner never saw it and settled nothing: the shield passed it on
                await self._stopped_before_start(handle, tenant, interaction_id)
                return
            await self._shut_down(handle, task, tenant, interaction_id, claim.fence)
            raise

    async def _stopped_before_start(self, handle: RunHandle, tenant: str, interaction_id: str) -> None:
        """A run stopped before it began: a cancel's is saved (nothing made); the others' (a takeover, an
        unwritable log) are another process's or the reaper's to end."""
        log.info("interaction %s was stopped (%s) before its run began", interaction_id, handle.reason)
        if handle.reason == CANCELLED:
            await self.settler.settle_without_run(tenant, interaction_id, Move.SAVE_CANCELLED, None)

    async def _retried(self, step: Callable[[], Awaitable[T]], what: str) -> T:
        """`step` tried again through an outage of the tenant's Redis (its Cluster node failing over while
        the queue's Redis hands out jobs) for up to a lease, where the job failed with an ERROR and its run
        waited for the reaper. Safe to repeat: the claim carries the job's fence (a try after one that
        landed, its reply lost, is refused as stale, and the reaper re-runs what that one claimed), and
        the rest only reads."""
        done: list[T] = []

        async def once() -> None:
            done.append(await step())

        seconds = self.store.runs.lease_ms / 1000
        outage = self.writer.outage
        await through_outage(once, seconds=seconds, landed=lambda _exc: False, outage=outage, what=what)
        return done[-1]

    async def _spec(self, tenant: str, interaction_id: str, claim: Claim, generation: int) -> RunSpec:
        record = await self.store.interactions.get(tenant, interaction_id)
        history = await self._history(tenant, record.previous_interaction_id, generation)
        config = record.config.config
        backend, upstream_model = self.router.route(config)
        # a remote run is followed again from its start: what its clients were shown is shown once
        shown = 0
        if record.remote_id is not None and claim.seq:
            shown = assemble.step_events(await self.store.log.frames(tenant, interaction_id))
        return RunSpec(
            tenant=tenant,
            interaction_id=interaction_id,
            fence=claim.fence,
            seq=claim.seq,
            background=True,
            # what its tenant's token limits leave it now, not when it was queued
            budget=await self.quota.budget(tenant),
            announce=claim.seq == 0,
            shown=shown,
            created=record.created,
            previous_interaction_id=record.previous_interaction_id,
            config=record.config,
            request=upstream_request(
                config,
                upstream_model,
                [*history, *record.input_steps],
                background=True,
                remote_id=record.remote_id,
            ),
            backend=backend,
        )

    async def _history(self, tenant: str, previous_interaction_id: str | None, generation: int) -> list[Step]:
        if not previous_interaction_id:
            return []
        cached = self.histories.get(tenant, previous_interaction_id)
        if cached is not None:
            return list(cached)
        chain = await self.store.interactions.check_chain(tenant, previous_interaction_id, walk=True)
        steps = chain.steps or []
        self.histories.put(tenant, previous_interaction_id, tuple(steps), generation)
        return steps

    async def _shut_down(
        self, handle: RunHandle, task: asyncio.Task[RunResult], tenant: str, interaction_id: str, fence: int
    ) -> None:
        """The worker is shutting down: stop the run. One that made no output yet (or follows a remote
        run) goes back to the queue, one that did settles as failed with its output (a re-run would repeat
        it), and one already writing its end is let finish."""
        if handle.settling:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.shield(task)
            return
        settled = False
        if not task.done():
            handle.reason = SHUTDOWN
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
                settled = True
        if not settled:
            await self.hand_back(tenant, interaction_id, fence, refund=True)

    async def hand_back(self, tenant: str, interaction_id: str, fence: int, *, refund: bool) -> bool:
        """Queue the run again under a new fence (refunding its attempt when this worker gave it up)."""
        try:
            new_fence = await self.store.runs.requeue(
                tenant, interaction_id, fence, self.settings.runner.pickup_ms, refund=refund
            )
        except (StoreConflict, NotFound):
            return False
        await self.store.jobs.enqueue(tenant, interaction_id, new_fence)
        return True
