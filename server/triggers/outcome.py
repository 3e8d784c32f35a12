"""How an execution ends: with its interaction's end, or at its trigger's `execution_timeout_seconds`.

The interaction an execution makes names it (its hash's Field.TRIGGER), so the script that ends it queues
the job of its end (store/scripts/_notify.lua) as it does for an interaction whose webhooks listen, and
that job settles the execution (`ended`, trigger_settle.lua, once) as soon as the interaction ends: its
status, its `end_time`, the trigger's failure count and its `error` status are written then, read or not.
The backstop stays: an execution in progress is also settled when anyone looks (a read of its trigger or
of its executions, the trigger's next fire, which must know whether its last run still goes) and by a job
due at its timeout, which cancels an interaction still running then; so an end job lost (a failover that
lost the last writes, an interaction made by an earlier version) delays an execution's end only until then.
"""

from __future__ import annotations

import contextlib
import logging

from ..errors import RequestError
from ..protocol import status as st
from ..runner.control import Control
from ..store.commands import now_ms
from ..store.outage import UNAVAILABLE
from ..store.store import Store
from ..store.triggers import ExecutionRecord, TriggerRecord

log = logging.getLogger(__name__)

#: interactions ended so that the execution succeeded: it answered (a function call it asks the client
#: for is an answer too)
_SUCCEEDED = frozenset({st.COMPLETED, st.REQUIRES_ACTION, st.REQUIRES_CONTINUATION})
TIMED_OUT = "timed_out"
#: an execution whose interaction was never created (its fire's worker died, and no fire came again) is
#: failed after this long
_NEVER_CREATED_MS = 60_000


class Outcomes:
    def __init__(self, store: Store, control: Control) -> None:
        self.store = store
        self.control = control

    async def settle_running(self, tenant: str, record: TriggerRecord) -> bool:
        """Settle the trigger's execution in progress if its interaction ended or it ran out of time;
        whether it did."""
        if record.running is None:
            return False
        trigger_id = record.config.id
        execution = await self.store.triggers.execution(tenant, trigger_id, record.running)
        if execution is None:
            # dropped as the oldest of its trigger's executions: no longer in progress (the script frees it)
            await self.store.triggers.settle(
                tenant, trigger_id, record.running, "failed", "", now=now_ms(), failed=False, limit=0
            )
            return True
        if execution.status != "in_progress":
            return False
        ended = await self._end_of(tenant, execution, record.config.execution_timeout_seconds * 1000)
        if ended is None:
            return False
        status, error = ended
        settled = await self.store.triggers.settle(
            tenant,
            trigger_id,
            execution.id,
            status,
            error,
            now=now_ms(),
            failed=status != "completed",
            limit=record.config.max_consecutive_failures,
        )
        if settled and status == TIMED_OUT and execution.ix is not None:
            # stopped once settled, so that the end the cancel makes (heard by `ended`) finds it settled
            with contextlib.suppress(RequestError, *UNAVAILABLE):
                await self.control.cancel(tenant, execution.ix)
        return settled

    async def ended(self, tenant: str, interaction_id: str) -> bool:
        """The part of an interaction's end job (worker_jobs.interaction_ended): the execution that made
        it settled with its end, and the interaction recorded on it (its fire may not have yet); whether it
        was settled (not for an interaction no execution made, nor twice)."""
        made = await self.store.triggers.made_by(tenant, interaction_id)
        if made is None:
            return False
        trigger_id, execution_id, status = made
        ended = _outcome(status)
        record = await self.store.triggers.get(tenant, trigger_id)
        if ended is None or record is None:
            return False
        return await self.store.triggers.settle(
            tenant,
            trigger_id,
            execution_id,
            *ended,
            now=now_ms(),
            failed=ended[0] != "completed",
            limit=record.config.max_consecutive_failures,
            interaction_id=interaction_id,
        )

    async def _end_of(
        self, tenant: str, execution: ExecutionRecord, timeout_ms: int
    ) -> tuple[str, str] | None:
        """(status, error) of an execution that has ended, None while it goes on."""
        started = execution.start or execution.scheduled
        late = now_ms() - started > timeout_ms
        if execution.ix is None:
            if late or now_ms() - started > _NEVER_CREATED_MS:
                return "failed", "its interaction was not created"
            return None
        status = await self.store.interactions.status(tenant, execution.ix)
        if status is None:
            return "failed", f"its interaction {execution.ix} is gone (deleted or expired)"
        if (ended := _outcome(status)) is not None:
            return ended
        if not late:
            return None
        # still running past the trigger's timeout: the execution timed out, and its interaction is stopped
        return TIMED_OUT, f"its interaction ran past execution_timeout_seconds ({timeout_ms // 1000})"


def _outcome(status: str) -> tuple[str, str] | None:
    """(status, error) of an execution whose interaction is `status` (a record's), None while it goes on."""
    if status in _SUCCEEDED:
        return "completed", ""
    if status in st.TERMINAL:
        return "failed", f"its interaction ended {status}"
    return None
