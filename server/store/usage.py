"""What a tenant's interactions used, day by day (keys.usage): the amounts a settle adds in its own step
(scripts/_usage.lua, run by finish.lua and create.lua), the same for a call that stores nothing
(usage_add.lua), and the days read back for a report (server/usage/report.py).

A day is the UTC day an interaction ended on, by the clock of the process that settled it.
"""

from __future__ import annotations

import datetime
import functools
from collections.abc import Sequence
from typing import Final

from redis.asyncio import Redis

from ..observability import usage as usage_metrics
from ..protocol.interaction import Usage
from . import keys, search_tags
from .commands import now_ms, text
from .scripts import Scripts

#: what a day's hash counts per group, in the order of an amounts argument (_usage.lua's USAGE_AMOUNTS)
AMOUNTS: Final = ("in", "out", "cached", "thought", "total", "calls")
#: a field that counts the interactions that ended with a status: `<group>|s:<status>`
STATUS_PREFIX: Final = "s:"


def amounts(usage: Usage | None, calls: int) -> str:
    """The amounts argument of a settle: its tokens as the upstream reported them (none reported: 0), and
    its model calls. A total the upstream left out is input + output + thought."""
    u = usage or Usage()
    given = (u.total_input_tokens, u.total_output_tokens, u.total_cached_tokens, u.total_thought_tokens)
    numbers = [max(int(n or 0), 0) for n in given]
    total = u.total_tokens if u.total_tokens is not None else numbers[0] + numbers[1] + numbers[3]
    return " ".join(str(n) for n in (*numbers, max(int(total), 0), max(calls, 0)))


def day_of(ms: int) -> str:
    """The UTC day of a time (ms), as YYYY-MM-DD."""
    return _day(ms // 86_400_000)


@functools.lru_cache(maxsize=8)
def _day(number: int) -> str:
    # a datetime made for each settle and admission cost more than the rest of their Python work
    return (datetime.date(1970, 1, 1) + datetime.timedelta(days=number)).isoformat()


def today_key(tenant: str) -> str:
    """The usage key a settle made now adds to."""
    return keys.usage(tenant, day_of(now_ms()))


class UsageStore:
    def __init__(self, redis: Redis, scripts: Scripts, ttl_seconds: int) -> None:
        self.redis = redis
        self.scripts = scripts
        self.ttl_ms = ttl_seconds * 1000

    async def add(self, tenant: str, tags: str, status: str, usage: Usage | None, calls: int) -> None:
        """Count a call that stores nothing (it has no settle to count it)."""
        used, now = amounts(usage, calls), now_ms()
        await self.scripts.usage_add(
            keys=[keys.usage(tenant, day_of(now))], args=[tags, status, used, self.ttl_ms, now]
        )
        usage_metrics.counted(search_tags.model_of(tags), status, used, tenant)

    async def days(self, tenant: str, days: Sequence[str]) -> dict[str, dict[str, int]]:
        """Each day's counts (`<group>|<what>` -> n), in one round trip; a day with none is left out."""
        pipe = self.redis.pipeline(transaction=False)
        for day in days:
            pipe.hgetall(keys.usage(tenant, day))
        found: list[dict[bytes, bytes]] = await pipe.execute()
        return {
            day: {text(field): int(value) for field, value in counts.items()}
            for day, counts in zip(days, found, strict=True)
            if counts
        }
