"""The progress of delete-by-filter jobs (server/search/deleting.py): one hash each, kept a day after its
last change."""

from __future__ import annotations

from typing import Any, cast

import msgspec
from redis.asyncio import Redis

from . import keys
from .commands import now_ms, text
from .scripts import Scripts

#: how long a deletion's progress is kept after its last change
KEEP_MS = 24 * 3600 * 1000


class Progress(msgspec.Struct, kw_only=True):
    """`state`: pending, running, done or failed; counts so far; `filter` as the request gave it (JSON)."""

    state: str
    filter: bytes
    created_ms: int
    updated_ms: int
    matched: int = 0
    conversations: int = 0
    conversations_done: int = 0
    deleted: int = 0
    error: str | None = None


class Deletions:
    def __init__(self, redis: Redis, scripts: Scripts) -> None:
        # hgetall on one key: the untyped client (commands.Commands has no hash reads)
        self.redis = cast(Any, redis)
        self.scripts = scripts

    async def create(self, tenant: str, deletion_id: str, filter_json: bytes) -> Progress:
        now = now_ms()
        progress = Progress(state="pending", filter=filter_json, created_ms=now, updated_ms=now)
        await self._write(tenant, deletion_id, _fields(progress))
        return progress

    async def update(self, tenant: str, deletion_id: str, **changes: Any) -> None:
        """Set some of Progress's fields (`deleted` is added to, since two workers may share the job)."""
        added = changes.pop("deleted", 0)
        fields = {**{k: _raw(v) for k, v in changes.items()}, "updated_ms": now_ms()}
        await self._write(tenant, deletion_id, fields, added)

    async def get(self, tenant: str, deletion_id: str) -> Progress | None:
        raw: dict[bytes, bytes] = await self.redis.hgetall(keys.deletion(tenant, deletion_id))
        if not raw:
            return None
        fields = {text(name): value for name, value in raw.items()}
        return Progress(
            state=text(fields["state"]),
            filter=fields["filter"],
            created_ms=int(fields["created_ms"]),
            updated_ms=int(fields["updated_ms"]),
            matched=int(fields.get("matched", 0)),
            conversations=int(fields.get("conversations", 0)),
            conversations_done=int(fields.get("conversations_done", 0)),
            deleted=int(fields.get("deleted", 0)),
            error=text(fields["error"]) if fields.get("error") else None,
        )

    async def _write(self, tenant: str, deletion_id: str, mapping: dict[str, Any], added: int = 0) -> None:
        """One step (deletion_write.lua): a MULTI would do on one Redis, but not on a Cluster's client."""
        pairs = [part for name, value in mapping.items() for part in (name, value)]
        await self.scripts.deletion_write(
            keys=[keys.deletion(tenant, deletion_id)], args=[KEEP_MS, str(added), *pairs]
        )


def _raw(value: Any) -> Any:
    return "" if value is None else value


def _fields(progress: Progress) -> dict[str, Any]:
    return {name: _raw(getattr(progress, name)) for name in progress.__struct_fields__}
