"""A repeated Idempotency-Key gets the first call's interaction, once the first call would have answered.

The first call stores which interaction (and which body) the key made. A repeat with another body is a
400. A repeat of a background call gets the interaction at once; a repeat of a foreground call waits for
its end, woken by the interaction's event log (every foreground call with a key is logged): no polling.
"""

from __future__ import annotations

import asyncio

from ..errors import InvalidArgument, NotFound
from ..protocol import lifecycle
from ..protocol.records import Record
from ..store.idempotency import digest
from ..store.store import Store

#: how long a repeated Idempotency-Key waits for the first call's answer
_WAIT_SECONDS = 600.0
#: how long it waits for the first call's record to appear (it is stored milliseconds after the key)
_STORING_SECONDS = 1.0


class Idempotency:
    def __init__(self, store: Store) -> None:
        self.store = store
        #: the longest single wait on the log (so a deleted interaction is noticed): the blocking client's
        #: reads are bounded by the keep-alive interval, the longest block it expects
        self.block_seconds = store.settings.runner.keepalive_seconds

    async def first_or_repeat(self, tenant: str, key: str, interaction_id: str, body: bytes) -> Record | None:
        """None for the first call with this key (now remembered), else the first call's interaction."""
        body_digest = digest(body)
        known = await self.store.idempotency.remember(tenant, key, interaction_id, body_digest)
        if known is None:
            return None
        known_id, known_digest = known
        if known_digest != body_digest:
            raise InvalidArgument(
                "This Idempotency-Key was used with a different request body", "Idempotency-Key"
            )
        return await self._answer(tenant, known_id)

    async def forget(self, tenant: str, key: str) -> None:
        await self.store.idempotency.forget(tenant, key)

    async def _answer(self, tenant: str, interaction_id: str) -> Record:
        loop = asyncio.get_running_loop()
        started = loop.time()
        after = 0
        while True:
            try:
                record: Record | None = await self.store.interactions.get(tenant, interaction_id)
            except NotFound:
                record = None
            waited = loop.time() - started
            if record is None and waited > _STORING_SECONDS:
                # not the first request still storing it: deleted since, or its create failed
                raise NotFound(interaction_id)
            if record is not None and (
                record.background or record.status in lifecycle.FINISHED or waited > _WAIT_SECONDS
            ):
                return record
            block = min(_STORING_SECONDS if record is None else _WAIT_SECONDS - waited, self.block_seconds)
            # wakes on the next event (the terminal one is written with the final status), or after `block`
            after, _frames = await self.store.log.follow(tenant, interaction_id, after, int(block * 1000) + 1)
