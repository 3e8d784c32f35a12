"""Reads of an interaction's event log (a Redis Stream, entry `0-<seq>` for event `evt_<seq>`).

Writes go through `runs` (append, finish): they are part of a run's lease and status. Blocking reads go
to the blocking client, so a thousand followers never starve the commands.
"""

from __future__ import annotations

from redis.asyncio import Redis

from . import keys
from .commands import text, typed


class EventLogStore:
    def __init__(self, redis: Redis, blocking: Redis) -> None:
        self.redis = typed(redis)
        self.blocking = typed(blocking)

    async def exists(self, tenant: str, interaction_id: str) -> bool:
        return bool(await self.redis.exists(keys.events(tenant, interaction_id)))

    async def has_event(self, tenant: str, interaction_id: str, seq: int) -> bool:
        entry = f"0-{seq}"
        return bool(await self.redis.xrange(keys.events(tenant, interaction_id), entry, entry, count=1))

    async def frames(self, tenant: str, interaction_id: str, after: int = 0) -> list[bytes]:
        """The frames after event `after` (all of them by default)."""
        entries = await self.redis.xrange(keys.events(tenant, interaction_id), f"(0-{after}", "+")
        return [fields[b"e"] for _entry_id, fields in entries]

    async def follow(
        self, tenant: str, interaction_id: str, after: int, block_ms: int, count: int = 1000
    ) -> tuple[int, list[bytes]]:
        """The frames after event `after`, waiting up to `block_ms` for the first; (last seq, frames).

        A log that does not exist yet is waited on too: XREAD wakes when its first entry is added."""
        response = await self.blocking.xread(
            {keys.events(tenant, interaction_id): f"0-{after}"}, count=count, block=block_ms
        )
        frames: list[bytes] = []
        for _key, entries in response or []:
            for entry_id, fields in entries:
                after = int(text(entry_id).partition("-")[2])
                frames.append(fields[b"e"])
        return after, frames
