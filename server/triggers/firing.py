"""A trigger's scheduled time, fired once: a job due at that time (keys.trigger_fire_job_id, one id per
trigger and time), which a worker's timer wakes then (server/runner/due_jobs.py) and one worker runs.

The fire is decided by one script (trigger_fire.lua): only the job of the time the trigger names as
`next` does anything, and it moves `next` on in the same step, so a job run again (its worker was killed
after the script) finds the time taken and only finishes what its first run may not have: the next
time's job, and the execution's interaction, created under an Idempotency-Key of the execution's, so
that it is made once. A time reached more than `[triggers] missed_after_seconds` late (nothing ran
then) is recorded `skipped`, with the others missed since, never run in a burst; a time that comes while
the last execution still runs is `skipped` too, so that each run continues a finished one.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Sequence
from typing import Any

import msgspec

from ..errors import RequestError
from ..runner.create import Creator
from ..runner.replies import Reply
from ..sections import TriggerSettings
from ..store import keys
from ..store.commands import now_ms
from ..store.jobs import TRIGGER_END_JOB, TRIGGER_JOB
from ..store.store import Store
from ..store.triggers import FIRED, GONE, INACTIVE, STALE, ExecutionRecord, FireOutcome, TriggerRecord, marker
from . import headers, template
from .outcome import Outcomes
from .schedule import Schedule

log = logging.getLogger(__name__)

MISSED = "missed: no worker reached this time within [triggers] missed_after_seconds"
_decode_template = msgspec.json.Decoder(dict[str, Any]).decode


def scheduled_id(scheduled_ms: int) -> str:
    """The execution of a scheduled time: named by it, so that one time makes one execution."""
    return f"x{scheduled_ms}"


class Firing:
    def __init__(
        self,
        store: Store,
        creator: Creator,
        outcomes: Outcomes,
        settings: TriggerSettings,
        server_keys: Sequence[bytes],
    ) -> None:
        #: open the MCP header values of its interactions' tools (any of them; headers.py)
        self.server_keys = list(server_keys)
        self.store = store
        self.creator = creator
        self.outcomes = outcomes
        self.settings = settings

    async def queue(self, tenant: str, trigger_id: str, scheduled_ms: int) -> None:
        """The fire job of a time (nothing if it is queued already), then the sweep's note of that time
        (sweep.py): should the job be lost, the sweep finds the trigger once the time is long past."""
        job = keys.trigger_fire_job_id(tenant, trigger_id, scheduled_ms)
        # a time now or past is still queued for later (1 ms): every fire job is in the deferred set, so
        # that one whose worker died is woken again (due.lua)
        run_at = max(scheduled_ms, now_ms() + 1)
        await self.store.jobs.enqueue_call(
            job, TRIGGER_JOB, (tenant, trigger_id, scheduled_ms), run_at_ms=run_at
        )
        await self.store.triggers.index(tenant, trigger_id, scheduled_ms)

    async def fire(self, tenant: str, trigger_id: str, scheduled_ms: int) -> None:
        """The job of one scheduled time."""
        record = await self._current(tenant, trigger_id)
        if record is None:
            return
        if record.next_ms != scheduled_ms or record.status != "active":
            await self._again(tenant, record, scheduled_ms)
            return
        now = now_ms()
        schedule = Schedule(record.config.schedule, record.config.time_zone)
        grace = self.settings.missed_after_seconds * 1000
        # the next time: the first after this one that is not missed (it may be due at once)
        next_ms = schedule.next_after(max(scheduled_ms, now - grace - 1))
        missed = schedule.times(
            scheduled_ms, min(next_ms - 1, now - grace - 1), self.settings.executions_kept
        )
        outcome = await self.store.triggers.fire(
            tenant,
            trigger_id,
            now,
            scheduled_ms,
            execution_id=scheduled_id(scheduled_ms),
            run=now - scheduled_ms <= grace,
            next_ms=next_ms,
            kept=self.settings.executions_kept,
            missed_error=MISSED,
            missed=missed,
        )
        if outcome.what in (GONE, INACTIVE):
            return
        if outcome.what == STALE:
            # another run of this job (or an update) moved `next` between the read and the script
            if (current := await self.store.triggers.get(tenant, trigger_id)) is not None:
                await self._again(tenant, current, scheduled_ms)
            return
        await self.queue(tenant, trigger_id, next_ms)
        await self._started(tenant, record, outcome)

    async def _current(self, tenant: str, trigger_id: str) -> TriggerRecord | None:
        """The trigger, its execution in progress settled first if it has ended."""
        record = await self.store.triggers.get(tenant, trigger_id)
        if record is not None and await self.outcomes.settle_running(tenant, record):
            record = await self.store.triggers.get(tenant, trigger_id)
        return record

    async def _again(self, tenant: str, record: TriggerRecord, scheduled_ms: int) -> None:
        """A fire job for a time that is not next: run again after its worker died, it finishes what the
        first run may not have (the next time's job, this time's interaction); else it does nothing."""
        if record.status == "active" and record.next_ms is not None:
            await self.queue(tenant, record.config.id, record.next_ms)
        execution = await self.store.triggers.execution(tenant, record.config.id, scheduled_id(scheduled_ms))
        if execution is not None and execution.status == "in_progress" and execution.ix is None:
            await self.start(tenant, record, execution)

    async def _started(self, tenant: str, record: TriggerRecord, outcome: FireOutcome) -> None:
        if outcome.what == FIRED and outcome.execution is not None:
            await self.start(tenant, record, outcome.execution)

    async def run_now(self, tenant: str, record: TriggerRecord) -> ExecutionRecord:
        """`POST .../executions`: an execution now, whatever the schedule and status (a time that comes
        while it runs is skipped; one asked while another runs is itself skipped)."""
        now = now_ms()
        execution_id = f"r{now}{secrets.token_hex(2)}"
        outcome = await self.store.triggers.fire(
            tenant,
            record.config.id,
            now,
            now,
            manual=True,
            execution_id=execution_id,
            run=True,
            kept=self.settings.executions_kept,
        )
        if outcome.what == GONE or outcome.execution is None:
            raise RequestError("the trigger was deleted meanwhile")
        if outcome.what == FIRED:
            await self.start(tenant, record, outcome.execution)
        found = await self.store.triggers.execution(tenant, record.config.id, execution_id)
        return found or outcome.execution

    async def start(self, tenant: str, record: TriggerRecord, execution: ExecutionRecord) -> None:
        """Create the execution's interaction (once, whoever calls: its Idempotency-Key is the execution's)
        and queue the check at its timeout."""
        trigger_id = record.config.id
        stored = _decode_template(record.config.interaction)
        opened = headers.opened(stored, tenant, trigger_id, self.server_keys)
        body = template.body_of(opened, execution.prev)
        key = keys.trigger_idempotency_key(trigger_id, execution.id)
        try:
            request, steps, warnings = template.decoded(body)
            reply = await self.creator.create(
                tenant,
                request,
                steps,
                warnings,
                idempotency_key=key,
                body=body,
                # the interaction names the execution, which hears of its end (outcome.py)
                execution=marker(trigger_id, execution.id),
            )
        except RequestError as exc:
            # refused now though it passed at create (a route or an agent removed since, a chain too deep)
            log.warning("trigger %s: its interaction was refused: %s", trigger_id, exc)
            await self.store.triggers.settle(
                tenant,
                trigger_id,
                execution.id,
                "failed",
                str(exc),
                now=now_ms(),
                failed=True,
                limit=record.config.max_consecutive_failures,
            )
            return
        # a background create answers the interaction (with its id: it is stored), never a stream
        assert isinstance(reply, Reply) and reply.interaction.id is not None
        interaction_id = reply.interaction.id
        await self.store.triggers.started(tenant, trigger_id, execution.id, interaction_id)
        due = (execution.start or now_ms()) + record.config.execution_timeout_seconds * 1000 + 1000
        job = f"{keys.trigger_fire_job_id(tenant, trigger_id, due)}/end"
        await self.store.jobs.enqueue_call(job, TRIGGER_END_JOB, (tenant, trigger_id), run_at_ms=due)

    async def settle(self, tenant: str, trigger_id: str) -> None:
        """The job due at an execution's timeout: settle it (cancelled if still running)."""
        await self._current(tenant, trigger_id)
