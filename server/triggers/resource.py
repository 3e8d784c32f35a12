"""The Triggers resource: create, list, get, update, delete a tenant's triggers; run one now; list its
executions (README, "Triggers").

A create checks its schedule (croniter, in its zone, no two times closer than `[triggers]
min_interval_seconds`), its interaction (template.py: as a create of it would be checked), and the
tenant's `max_triggers`, then queues the fire job of its first time before it stores the trigger: a job
for a time the trigger does not name as next does nothing, and a trigger stored is never without its
job. A read settles the execution in progress first (outcome.py), so that what it shows is current.
"""

from __future__ import annotations

import msgspec

from ..errors import LimitReached, TriggerNotFound
from ..protocol import paging
from ..protocol.codec import json_encoder
from ..runner.create import Creator
from ..sections import TriggerSettings
from ..store.commands import now_ms
from ..store.store import Store
from ..store.triggers import TriggerConfig, TriggerRecord
from . import headers, rules, template
from .firing import Firing
from .outcome import Outcomes
from .schedule import Schedule
from .wire import (
    CreateTrigger,
    Execution,
    ExecutionList,
    Trigger,
    TriggerList,
    UpdateTrigger,
    execution_view,
    view,
)


class TriggerResource:
    def __init__(
        self, store: Store, creator: Creator, outcomes: Outcomes, firing: Firing, settings: TriggerSettings
    ) -> None:
        #: seal the MCP header values of its interactions' tools (the first; headers.py)
        self.server_keys = firing.server_keys
        self.store = store
        self.creator = creator
        self.outcomes = outcomes
        self.firing = firing
        self.settings = settings

    async def create(self, tenant: str, body: CreateTrigger) -> Trigger:
        now = now_ms()
        rules.environment(body.environment_id)
        schedule = rules.schedule(body.schedule, body.time_zone, self.settings, now)
        trigger_id = rules.new_id()
        checked = await template.check(self.creator, tenant, body.interaction)
        stored = headers.sealed(checked, tenant, trigger_id, self.server_keys[0])
        config = TriggerConfig(
            id=trigger_id,
            create_ms=now,
            schedule=schedule.expression,
            time_zone=body.time_zone or "",
            interaction=msgspec.Raw(json_encoder.encode(stored)),
            execution_timeout_seconds=rules.timeout(body.execution_timeout_seconds, self.settings),
            max_consecutive_failures=rules.failure_limit(body.max_consecutive_failures),
        )
        name = rules.display_name(body.display_name)
        next_ms = schedule.next_after(now)
        limit = self.settings.max_triggers
        await self.firing.queue(tenant, config.id, next_ms)
        if not await self.store.triggers.create(tenant, config, name, next_ms, limit):
            raise LimitReached(f"This API key has {limit} triggers, the most it may have: delete one first")
        return await self.get(tenant, config.id)

    async def record(self, tenant: str, trigger_id: str) -> TriggerRecord:
        """The trigger as it is now: its execution in progress settled if its interaction has ended."""
        found = await self.store.triggers.get(tenant, rules.checked_id(trigger_id))
        if found is not None and await self.outcomes.settle_running(tenant, found):
            found = await self.store.triggers.get(tenant, trigger_id)
        if found is None:
            raise TriggerNotFound(trigger_id)
        await self._heal(tenant, found)
        return found

    async def _heal(self, tenant: str, record: TriggerRecord) -> None:
        """An active trigger whose next time passed long ago has lost its fire job (a failover of the
        queue's Redis that lost the last writes, say): it is queued again (no-op if it is there), and its
        fire records the times missed as any late fire does."""
        overdue = now_ms() - 2 * self.settings.missed_after_seconds * 1000
        if record.status == "active" and record.next_ms is not None and record.next_ms < overdue:
            await self.firing.queue(tenant, record.config.id, record.next_ms)

    async def get(self, tenant: str, trigger_id: str) -> Trigger:
        return view(await self.record(tenant, trigger_id))

    async def page(
        self, tenant: str, page_size: str | None, page_token: str | None, filter_: str | None = None
    ) -> TriggerList:
        """The tenant's triggers, oldest first (by creation), `page_size` at a time; `filter_` by status
        (a page may then hold fewer, and still a next page token)."""
        wanted = rules.status_filter(filter_)
        size = paging.page_size(page_size, rules.DEFAULT_PAGE_SIZE, rules.MAX_PAGE_SIZE)
        after = paging.after_token(page_token, rules.is_trigger_id)
        found = await self.store.triggers.page(tenant, after, size + 1)
        shown, more = found[:size], len(found) > size
        shown_ids = [trigger_id for _, trigger_id in shown]
        triggers = []
        for trigger_id in shown_ids:
            try:
                triggers.append(view(await self.record(tenant, trigger_id)))
            except TriggerNotFound:
                continue  # deleted since the page was read
        token = paging.page_token(shown[-1]) if more and shown else None
        kept = [each for each in triggers if wanted is None or each.status == wanted]
        return TriggerList(triggers=kept, next_page_token=token)

    async def update(self, tenant: str, trigger_id: str, body: UpdateTrigger, mask: str | None) -> Trigger:
        given = {name for name in ("display_name", "status") if getattr(body, name) is not None}
        fields = rules.update_mask(mask, given)
        status = rules.status(body.status) if "status" in fields else ""
        name = (rules.display_name(body.display_name),) if "display_name" in fields else None
        record = await self.record(tenant, trigger_id)
        next_ms = 0
        if status == "active" and record.status != "active":
            # resumed: from its next time after now (the times while paused are not run, nor recorded)
            next_ms = Schedule(record.config.schedule, record.config.time_zone).next_after(now_ms())
            await self.firing.queue(tenant, trigger_id, next_ms)
        if not await self.store.triggers.update(tenant, trigger_id, now_ms(), name, status, next_ms):
            raise TriggerNotFound(trigger_id)
        return await self.get(tenant, trigger_id)

    async def delete(self, tenant: str, trigger_id: str) -> None:
        if not await self.store.triggers.delete(tenant, rules.checked_id(trigger_id)):
            raise TriggerNotFound(trigger_id)
        # after it: a delete cut short here leaves a note the sweep drops (the trigger is gone)
        await self.store.triggers.unindex(tenant, trigger_id)

    async def run(self, tenant: str, trigger_id: str) -> Execution:
        record = await self.record(tenant, trigger_id)
        return execution_view(trigger_id, await self.firing.run_now(tenant, record))

    async def executions(
        self, tenant: str, trigger_id: str, page_size: str | None, page_token: str | None
    ) -> ExecutionList:
        """Its executions, oldest first (by scheduled time), `page_size` at a time."""
        await self.record(tenant, trigger_id)
        size = paging.page_size(page_size, rules.DEFAULT_PAGE_SIZE, rules.MAX_PAGE_SIZE)
        after = paging.after_token(page_token, _is_execution_id)
        found = await self.store.triggers.executions(tenant, trigger_id, after, size + 1)
        shown, more = found[:size], len(found) > size
        token = paging.page_token((shown[-1].scheduled, shown[-1].id)) if more and shown else None
        return ExecutionList(
            trigger_executions=[execution_view(trigger_id, each) for each in shown], next_page_token=token
        )


def _is_execution_id(value: str) -> bool:
    return len(value) < 40 and value[:1] in ("x", "r") and value[1:].isalnum()
