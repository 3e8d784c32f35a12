"""Idempotency keys: the first create with a key stores which interaction (and which body) it made."""

from __future__ import annotations

import hashlib

from redis.asyncio import Redis

from . import keys
from .commands import text, typed


def digest(value: str | bytes) -> str:
    return hashlib.sha256(value.encode() if isinstance(value, str) else value).hexdigest()


class IdempotencyKeys:
    def __init__(self, redis: Redis, ttl_seconds: int) -> None:
        self.redis = typed(redis)
        self.ttl_seconds = ttl_seconds

    async def remember(
        self, tenant: str, key: str, interaction_id: str, body_digest: str
    ) -> tuple[str, str] | None:
        """Record the key; if it is already known, return (interaction id, body digest) seen with it."""
        name = keys.idempotency(tenant, digest(key))
        if await self.redis.set(name, f"{interaction_id} {body_digest}", nx=True, ex=self.ttl_seconds):
            return None
        existing = await self.redis.get(name)
        if existing is None:
            return None
        known_id, _, known_digest = text(existing).partition(" ")
        return known_id, known_digest

    async def forget(self, tenant: str, key: str) -> None:
        await self.redis.delete(keys.idempotency(tenant, digest(key)))
