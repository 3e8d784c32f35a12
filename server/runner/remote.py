"""A turn an upstream runs as a run of its own (upstream.base.RemoteStarted, Google's background
interactions): stopped when ours ends before it, deleted with our record."""

from __future__ import annotations

import asyncio
import logging
from typing import Final

from ..upstream.base import Backend, RemoteRuns, UpstreamError

log = logging.getLogger(__name__)

#: how long a remote cancel may hold up the end of a run (ours is settled already)
_CANCEL_SECONDS: Final = 10.0


async def cancel_unended(backend: Backend, remote_id: str | None, *, ended: bool) -> None:
    """After a run: cancel its remote run, if it has one that it did not see end."""
    if remote_id is not None and not ended:
        await cancel(backend, remote_id)


async def cancel(backend: Backend, remote_id: str) -> None:
    """Cancel the remote run; a failure is logged (ours has ended all the same)."""
    if not isinstance(backend, RemoteRuns):
        return
    try:
        async with asyncio.timeout(_CANCEL_SECONDS):
            await backend.cancel_remote(remote_id)
    except (UpstreamError, TimeoutError) as exc:
        log.warning("the remote run %s of %s was not cancelled: %s", remote_id, backend.name, exc)


async def delete(backend: Backend, remote_id: str) -> None:
    """Delete the remote run before ours is: raises `UpstreamError` if it could not be (ours is kept)."""
    if isinstance(backend, RemoteRuns):
        await backend.delete_remote(remote_id)
