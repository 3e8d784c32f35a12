"""The progress of delete-by-filter jobs (server/search/deleting.py): one hash each, kept a day after its
last change. Beside the counts it holds what a re-run of the job needs to keep them true: the
conversations the filter matched when the job began (`roots`, written once), and the ids of the delete
under way (`inflight`), so that a run that died between a delete and its count is counted by the next."""

from __future__ import annotations

from typing import Any, cast

import msgspec
from redis.asyncio import Redis

from . import keys
from .commands import netstrings, now_ms, text
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
    #: the ids of the delete under way (JSON), empty between deletes
    inflight: bytes = b""


class Tally(msgspec.Struct, frozen=True):
    """A delete's count in its job's progress, written by the delete itself (scripts/delete.lua)."""

    key: str
    keep_ms: int
    fields: bytes


#: the fields of Progress as stored (the hash holds `roots` beside them, read only by a re-run)
_FIELDS = list(Progress.__struct_fields__)
_ROOTS = "roots"


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

    def tally(self, tenant: str, deletion_id: str, **changes: Any) -> Tally:
        """What a delete of the job (store/interactions.py `delete`) writes in its progress in the same
        step: what it removed, added to `deleted`, and `changes`."""
        fields = {**{k: _raw(v) for k, v in changes.items()}, "updated_ms": now_ms()}
        pairs = [part for name, value in fields.items() for part in (name, value)]
        return Tally(key=keys.deletion(tenant, deletion_id), keep_ms=KEEP_MS, fields=netstrings(pairs))

    async def collected(self, tenant: str, deletion_id: str, roots: list[str], matched: int) -> None:
        """What the filter matched as the job began: its conversations (kept for a re-run) and counts."""
        await self.update(
            tenant, deletion_id, state="running", matched=matched, conversations=len(roots),
            **{_ROOTS: msgspec.json.encode(roots)},
        )  # fmt: skip

    async def roots(self, tenant: str, deletion_id: str) -> list[str] | None:
        """The conversations `collected` kept; None before (or without) a collection."""
        raw = await self.redis.hget(keys.deletion(tenant, deletion_id), _ROOTS)
        return None if not raw else msgspec.json.decode(raw, type=list[str])

    async def get(self, tenant: str, deletion_id: str) -> Progress | None:
        # the named fields only: `roots` may be large, and an operation's GET does not show it
        values: list[bytes | None] = await self.redis.hmget(keys.deletion(tenant, deletion_id), _FIELDS)
        fields = {name: value for name, value in zip(_FIELDS, values, strict=True) if value is not None}
        if not fields:
            return None
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
            inflight=fields.get("inflight", b""),
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
