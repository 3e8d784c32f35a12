"""Get, cancel and delete a stored interaction (and the upstream's remote run of it, if it has one)."""

from __future__ import annotations

import time

from ..errors import InvalidArgument, NotFound, StatusChanged
from ..observability import metrics
from ..protocol import lifecycle, views
from ..protocol import status as st
from ..protocol.lifecycle import Event as Move
from ..protocol.records import Record
from ..store import keys
from . import remote
from .services import Services


class Control:
    def __init__(self, services: Services) -> None:
        self.store = services.store
        self.registry = services.registry
        self.histories = services.histories
        self.settler = services.settler
        self.router = services.router
        self.ack_seconds = services.settings.runner.cancel_ack_timeout_seconds

    async def get(self, tenant: str, interaction_id: str) -> Record:
        return await self.store.interactions.get(tenant, interaction_id)

    async def cancel(self, tenant: str, interaction_id: str) -> Record:
        """Cancel; answered once the run has saved its output (or, if no run acknowledges within the
        cancel's wait, once it is settled from its log)."""
        started = time.perf_counter()
        try:
            prior = await self.store.runs.cancel(tenant, interaction_id, views.timestamp())
        except StatusChanged as exc:
            if exc.current == lifecycle.CANCELLING:
                # cancelled already and still saving: this cancel waits for the same end
                await self._settled(tenant, interaction_id, st.IN_PROGRESS)
            elif exc.current != st.CANCELLED:
                raise InvalidArgument(
                    f"Interaction {interaction_id!r} is {exc.current}; only queued or running interactions "
                    "can be cancelled",
                    "id",
                ) from None
            return await self.store.interactions.get(tenant, interaction_id)
        await self._settled(tenant, interaction_id, prior)
        metrics.cancelled(started)
        return await self.store.interactions.get(tenant, interaction_id)

    async def _settled(self, tenant: str, interaction_id: str, prior: str) -> None:
        acked = False
        if prior == st.IN_PROGRESS:
            # the signal went out in the script; a run in this process is stopped without the round trip
            self.registry.stop(keys.member(tenant, interaction_id))
            acked = await self.store.runs.wait_cancel_ack(tenant, interaction_id, self.ack_seconds)
        if not acked:
            await self.settler.settle_without_run(tenant, interaction_id, Move.SAVE_CANCELLED, None)
            # no run saw the cancel (its worker is gone): its remote run, if any, is told here
            record = await self.store.interactions.get(tenant, interaction_id)
            if record.remote_id is not None:
                await remote.cancel(self.router.route(record.config.config)[0], record.remote_id)

    async def delete(self, tenant: str, interaction_id: str) -> None:
        """Delete (a running one is cancelled first). A remote run goes first: one that could not be deleted
        there is an `UpstreamError`, and nothing is deleted here, so that a retry can finish the job."""
        status, remote_id = await self.store.interactions.status_and_remote(tenant, interaction_id)
        if status is None:
            raise NotFound(interaction_id)
        if remote_id is not None:
            record = await self.store.interactions.get(tenant, interaction_id)
            backend = self.router.route(record.config.config)[0]
            if status in lifecycle.UNFINISHED:
                # Google's delete does not stop a run: it would go on there, unseen, to its end
                await remote.cancel(backend, remote_id)
            await remote.delete(backend, remote_id)
        if status in lifecycle.UNFINISHED:
            try:
                await self.store.runs.cancel(tenant, interaction_id, views.timestamp())
            except StatusChanged:
                pass  # cancelled (or finished) meanwhile: it is deleted all the same
            self.registry.stop(keys.member(tenant, interaction_id))
        await self.store.interactions.delete(tenant, interaction_id)
        # every process drops the histories it holds for this tenant: none may outlive what they contain
        self.histories.forget_tenant(tenant)
        await self.store.interactions.broadcast_forget(tenant)
