"""Ending an interaction that no live run holds: cancelled while queued, a cancel nobody acknowledged,
a run whose process was lost, a request the backend refused before any run.

Its output is what its event log holds, which is what its clients saw (runner/assemble.py).
"""

from __future__ import annotations

from ..errors import NotFound, StoreConflict
from ..protocol import lifecycle, sse, views
from ..protocol.events import ErrorEvent, InteractionCompleted, InteractionStatusUpdate
from ..protocol.interaction import ErrorInfo
from ..protocol.lifecycle import Event as Move
from ..protocol.records import Output
from ..protocol.steps import Step
from ..store.store import Store
from . import assemble


class Settler:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def settle_without_run(
        self, tenant: str, interaction_id: str, event: Move, error: ErrorInfo | None
    ) -> bool:
        """End the interaction by `event`; False if it was not in a state `event` ends (or is gone)."""
        try:
            record = await self.store.interactions.get(tenant, interaction_id)
            status = lifecycle.next_state(record.status, event)
        except (NotFound, lifecycle.Refused):
            return False
        output = record.output
        if output is None:
            steps: list[Step] = []
            usage = None
            if record.logged:
                steps, usage = assemble.output_of(await self.store.log.frames(tenant, interaction_id))
            output = Output(steps=steps, usage=usage, errors=[error] if error else None)
        final = views.interaction(
            interaction_id=interaction_id,
            status=status,
            config=record.config,
            created=record.created,
            updated=views.timestamp(),
            previous_interaction_id=record.previous_interaction_id,
            output=output,
        )
        update = InteractionStatusUpdate(interaction_id=interaction_id, status=status)
        last = ErrorEvent(error=error) if error else InteractionCompleted(interaction=final)
        try:
            await self.store.runs.finish(
                tenant,
                interaction_id,
                event=event,
                fence=None,
                output=output,
                updated=final.updated or views.timestamp(),
                events=[sse.frame(update), sse.frame(last)],
                # the calls of a run that is gone are not known: one made what its log holds
                calls=1 if output.steps or output.usage else 0,
            )
        except (StoreConflict, NotFound):
            return False
        return True

    async def fail_unstarted(self, tenant: str, interaction_id: str, message: str) -> None:
        """A stored interaction that cannot run at all (the backend refused the request)."""
        try:
            await self.store.runs.finish(
                tenant,
                interaction_id,
                event=Move.FAIL,
                fence=None,
                output=Output(errors=[ErrorInfo(code="invalid_argument", message=message)]),
                updated=views.timestamp(),
                events=[],
            )
        except (StoreConflict, NotFound):
            pass  # cancelled or deleted meanwhile: nothing left to fail
