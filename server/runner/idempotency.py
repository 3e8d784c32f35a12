"""A repeated Idempotency-Key gets the first call's interaction, once the first call would have answered.

The first call's interaction is stored with its key in one step (store/idempotency.py, create.lua), so a
key always points at an interaction that exists: a create that got a 503 stored neither, and its retry with
the same key creates it. A repeat with another body is a 400. A repeat of a background call gets the
interaction at once; a repeat of a foreground call waits for its end, woken by the interaction's event log
(every foreground call with a key is logged): no polling.
"""

from __future__ import annotations

import asyncio

from ..errors import InvalidArgument, KeyUsed, NotFound
from ..protocol import lifecycle
from ..protocol.records import Record
from ..store import idempotency
from ..store.idempotency import KeyClaim, digest
from ..store.store import Store

#: how long a repeated Idempotency-Key waits for the first call's answer
_WAIT_SECONDS = 600.0


class Idempotency:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.ttl_seconds = store.settings.store.idempotency_ttl_seconds
        #: the longest single wait on the log (so a deleted interaction is noticed): the blocking client's
        #: reads are bounded by the keep-alive interval, the longest block it expects
        self.block_seconds = store.settings.runner.keepalive_seconds

    def claim(self, tenant: str, key: str, interaction_id: str, body: bytes) -> KeyClaim:
        """What the new interaction's store records for its key."""
        return idempotency.claim(tenant, key, interaction_id, body, self.ttl_seconds)

    async def made(self, tenant: str, key: str | None, body: bytes) -> Record | None:
        """The interaction `key` made, for a repeat with the same body (once it would have answered);
        None when the key made none, or it was deleted since (a create with it makes a new one)."""
        used = None if key is None else await self.store.interactions.made_by_key(tenant, key)
        if used is None:
            return None
        try:
            return await self.repeat(tenant, used, body)
        except NotFound:
            return None

    async def repeat(self, tenant: str, used: KeyUsed, body: bytes) -> Record:
        """The interaction the key made, for a repeat with the same body (once it would have answered)."""
        if used.body_digest != digest(body):
            raise InvalidArgument(
                "This Idempotency-Key was used with a different request body", "Idempotency-Key"
            )
        return await self._answer(tenant, used.interaction_id)

    async def _answer(self, tenant: str, interaction_id: str) -> Record:
        loop = asyncio.get_running_loop()
        started = loop.time()
        after = 0
        while True:
            # stored with the key: gone only if deleted since
            record = await self.store.interactions.get(tenant, interaction_id)
            waited = loop.time() - started
            if record.background or record.status in lifecycle.FINISHED or waited > _WAIT_SECONDS:
                return record
            block = min(_WAIT_SECONDS - waited, self.block_seconds)
            # wakes on the next event (the terminal one is written with the final status), or after `block`
            after, _frames = await self.store.log.follow(tenant, interaction_id, after, int(block * 1000) + 1)
