"""A tenant's limits against what Redis holds of it, in one script call (scripts/limits.lua): a request
admitted (and counted) or refused with the limit it reached, and the tokens a run may still use.

The tokens are those the usage totals count (store/usage.py): of the UTC day, and of the last minute (a
sliding window over the per-minute counts the settles add to). A run's tokens count once it settles, so
runs that start together each may use what was left when they started (README, "Limits").
"""

from __future__ import annotations

from typing import Final

import msgspec
from redis.asyncio import Redis

from ..protocol import lifecycle
from . import keys
from .commands import now_ms, text, typed
from .scripts import Scripts
from .usage import day_of

_UNFINISHED: Final = " ".join(sorted(lifecycle.UNFINISHED))


class TenantLimits(msgspec.Struct, frozen=True, kw_only=True):
    """A tenant's limits as they apply now; 0 is none."""

    requests_per_minute: int = 0
    tokens_per_minute: int = 0
    tokens_per_day: int = 0
    background_runs: int = 0
    stored_interactions: int = 0

    @property
    def any(self) -> bool:
        return bool(
            self.requests_per_minute or self.tokens or self.background_runs or self.stored_interactions
        )

    @property
    def tokens(self) -> bool:
        return bool(self.tokens_per_minute or self.tokens_per_day)


class Refusal(msgspec.Struct, frozen=True, kw_only=True):
    """The limit a request reached (a TenantLimits field's name), its value, and how long until a request
    would be admitted (ms)."""

    limit: str
    value: int
    retry_ms: int


class LimitsStore:
    def __init__(self, redis: Redis, scripts: Scripts) -> None:
        self.commands = typed(redis)
        self.scripts = scripts

    async def admit(
        self, tenant: str, limits: TenantLimits, background_id: str | None, *, stores: bool
    ) -> int | Refusal:
        """Admit a request (counted toward requests_per_minute; `background_id`, a background interaction
        about to be stored, toward background_runs; `stores`: it stores an interaction, checked against
        stored_interactions), or refuse it. Admitted: the tokens a run may use (-1: no token limit)."""
        if not stores:
            limits = msgspec.structs.replace(limits, stored_interactions=0)
        return await self.check(tenant, limits, background_id or "", admit=True)

    async def tokens_left(self, tenant: str, limits: TenantLimits) -> int:
        """What a run starting now may use before a token limit (-1: none), counting nothing."""
        left = await self.check(tenant, limits, "", admit=False)
        assert isinstance(left, int)
        return left

    async def forget_background(self, tenant: str, interaction_id: str) -> None:
        """An admitted background interaction whose create failed: no longer counted, unless it was stored
        before the failure (it is then queued and runs: its end frees its place). Its id is this create's
        alone, so nothing stores it after the look."""
        if not await self.commands.exists(keys.interaction(tenant, interaction_id)):
            await self.commands.zrem(keys.background_runs(tenant), interaction_id)

    async def check(
        self, tenant: str, limits: TenantLimits, background_id: str, *, admit: bool, now: int | None = None
    ) -> int | Refusal:
        """The script's answer: admitted (tokens left, -1: no token limit) or refused; `now` (ms), the
        time it is checked at (the process's clock's)."""
        now = now_ms() if now is None else now
        numbers = (
            now,
            limits.requests_per_minute,
            limits.tokens_per_minute,
            limits.tokens_per_day,
            limits.background_runs,
            limits.stored_interactions,
            int(admit),
        )
        result = await self.scripts.limits(
            keys=[keys.usage(tenant, day_of(now))],
            args=[" ".join(map(str, numbers)), background_id, _UNFINISHED],
        )
        if text(result[0]) == "ok":
            return int(result[1])
        return Refusal(limit=text(result[1]), retry_ms=int(result[2]), value=int(result[3]))
