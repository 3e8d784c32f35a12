"""The reaper: looks after runs whose lease (or pickup deadline) ran out, in every process.

Its policy, per run found:
- a cancel nobody saved: saved now, from the log;
- finished meanwhile (or gone): forgotten;
- background, its job still waiting in the queue: given more time, and a token that wakes a worker for it
  (the one queued with it may have died with a worker);
- background, queued and not started by its pickup deadline (its job lost, or taken by a worker that
  never claimed it): queued again;
- background, its runner lost with attempts left and no output seen by anyone: re-run (a new job); or
  with output, when its turn is a remote run: the re-run follows that run, showing only what is new;
- otherwise: failed as `worker_lost`, keeping the output its clients saw.
After a Redis outage it waits a lease period first: no lease could be renewed meanwhile.
"""

from __future__ import annotations

import logging
from typing import Final

from ..observability import metrics
from ..protocol import lifecycle
from ..protocol import status as st
from ..protocol.interaction import ErrorInfo
from ..protocol.lifecycle import Event as Move
from ..store import keys
from ..store.commands import now_ms
from ..store.outage import Outage
from ..store.runs import RunState
from . import assemble
from .jobs import LOST_WORKER, BackgroundJobs
from .services import Services

log = logging.getLogger(__name__)

LOST_SERVER: Final = "The server running this interaction was lost"


class Reaper:
    def __init__(self, services: Services, jobs: BackgroundJobs, outage: Outage) -> None:
        self.store = services.store
        self.settler = services.settler
        self.runner = services.settings.runner
        self.jobs = jobs
        self.outage = outage

    async def reap_once(self) -> int:
        """One pass; returns how many runs it looked at."""
        due = await self.store.runs.due()
        self.outage.answered()
        if self.outage.recent(self.runner.lease_seconds):
            # no lease could be renewed while Redis was away: live runs get a lease period to renew theirs
            return 0
        for member in due:
            tenant, interaction_id = keys.split_member(member)
            await self._look_after(
                tenant, interaction_id, await self.store.runs.state(tenant, interaction_id)
            )
        return len(due)

    async def _look_after(self, tenant: str, interaction_id: str, run: RunState) -> None:
        if run.status == lifecycle.CANCELLING:
            metrics.lost_run("cancel_saved")
            await self.settler.settle_without_run(tenant, interaction_id, Move.SAVE_CANCELLED, None)
            return
        if run.status not in lifecycle.UNFINISHED:
            await self.store.runs.forget_ended(tenant, interaction_id, run.status)
            return
        if run.background and await self._background(tenant, interaction_id, run):
            return
        message = LOST_WORKER if run.background else LOST_SERVER
        log.warning("failing %s: %s", keys.member(tenant, interaction_id), message)
        metrics.lost_run("failed")
        error = ErrorInfo(code="worker_lost", message=message)
        await self.settler.settle_without_run(tenant, interaction_id, _lose(run.status), error)

    async def _background(self, tenant: str, interaction_id: str, run: RunState) -> bool:
        """Whether a background run was given another chance (more time, its job again, a re-run)."""
        member = keys.member(tenant, interaction_id)
        pickup = now_ms() + self.runner.pickup_ms
        if await self.store.jobs.waiting(tenant, interaction_id, run.fence):
            # queued still, past its pickup deadline: its token may have died with a worker
            await self.store.jobs.wake_for(tenant, interaction_id, run.fence)
            await self.store.runs.watch(tenant, interaction_id, pickup)
            return True
        if run.status == st.QUEUED:
            # its job is gone, or a worker marked it taken and never claimed the run (the take's reply
            # lost): either way no worker will start it unless it is queued again
            log.warning("queueing %s again: no worker started it", member)
            metrics.lost_run("requeued")
            await self.store.jobs.queue_again(tenant, interaction_id, run.fence)
            await self.store.runs.watch(tenant, interaction_id, pickup)
            return True
        frames = await self.store.log.frames(tenant, interaction_id)
        # a re-run would show its followers a second answer after the first one's part: a run whose
        # clients saw output fails with that output kept instead, but for a remote run's, which a re-run
        # reads again from its start and shows from where its clients are
        if run.attempts < self.runner.max_attempts and (run.remote or not assemble.has_output(frames)):
            if await self.jobs.hand_back(tenant, interaction_id, run.fence, refund=False):
                log.warning("re-running %s: its runner was lost (attempt %d)", member, run.attempts + 1)
                metrics.lost_run("rerun")
            return True
        return False


def _lose(status: str | None) -> Move:
    """A queued interaction nobody runs fails like a lost one (LOSE starts from a run in progress)."""
    return Move.FAIL if status == st.QUEUED else Move.LOSE
