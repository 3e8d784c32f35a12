"""A tenant's requests admitted under its limits, and the token budget of each run (README, "Limits").

A create is admitted (or refused with `OverLimit`, a 429) by one script call before it does anything else
(runner/create.py): nothing of a refused request is stored, run or counted. A tenant with no limit costs
nothing (no Redis call). A run is given what its tenant's token limits leave: a foreground one what its
admission found, a background one what is left when its worker starts it (runner/jobs.py).
"""

from __future__ import annotations

import contextlib

from ..errors import OverLimit
from ..observability import usage as usage_metrics
from ..store.limits import LimitsStore, Refusal
from .table import LimitsTable


class Quota:
    def __init__(self, table: LimitsTable, store: LimitsStore) -> None:
        self.table = table
        self.store = store

    def replace(self, table: LimitsTable) -> None:
        """The limits server.toml says now (limits/table.py Watcher)."""
        self.table = table

    async def admit(
        self, tenant: str, background_id: str | None = None, *, stores: bool = True
    ) -> int | None:
        """Admit a create (`background_id`: the background interaction it is about to store; `stores`:
        whether it stores one), or raise OverLimit; the tokens its run may use (None: no token limit)."""
        limits = self.table.of(tenant)
        if not limits.any:
            return None
        background = background_id if limits.background_runs else None
        found = await self.store.admit(tenant, limits, background, stores=stores)
        if isinstance(found, Refusal):
            usage_metrics.over_limit(found.limit)
            raise OverLimit(found.limit, found.value, found.retry_ms / 1000)
        return None if found < 0 else found

    async def budget(self, tenant: str) -> int | None:
        """The tokens a run starting now may use (None: no token limit)."""
        limits = self.table.of(tenant)
        if not limits.tokens:
            return None
        left = await self.store.tokens_left(tenant, limits)
        return None if left < 0 else left

    async def forget(self, tenant: str, interaction_id: str) -> None:
        """A background interaction admitted and then not stored (its create failed): no longer counted.
        Best effort: one that stays is dropped once it is older than a create takes (limits.lua)."""
        if self.table.of(tenant).background_runs:
            with contextlib.suppress(Exception):
                await self.store.forget_background(tenant, interaction_id)
