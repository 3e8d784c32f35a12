"""What a use case answers: an interaction, or a stream of SSE frames. The API maps each to a response
in a line; how a stream ends, and what its client's going away does to the run, is decided here."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import msgspec

from ..errors import ServerError
from ..observability import metrics
from ..protocol import sse
from ..protocol.events import ErrorEvent
from ..protocol.interaction import ErrorInfo, Interaction
from ..store.outage import UNAVAILABLE
from .handle import DISCONNECTED, RunHandle
from .sinks import Listener, RunResult

log = logging.getLogger(__name__)

#: frames sent in one write at most, when a run produces faster than the client reads
_MAX_BATCH = 256


class Reply(msgspec.Struct, frozen=True):
    interaction: Interaction


class EventStream(msgspec.Struct, frozen=True):
    frames: AsyncIterator[bytes]


def relay(
    listener: Listener, handle: RunHandle, keepalive: float, cancel_on_disconnect: bool
) -> AsyncIterator[bytes]:
    """A foreground run's frames for its client. If the client goes away first, stop the run (or not)."""
    task = handle.task
    assert task is not None
    task.add_done_callback(lambda done: _end_on_failure(done, listener))
    return _frames(listener, handle, keepalive, cancel_on_disconnect)


async def _frames(
    listener: Listener, handle: RunHandle, keepalive: float, cancel_on_disconnect: bool
) -> AsyncIterator[bytes]:
    try:
        while True:
            try:
                async with asyncio.timeout(keepalive):
                    item = await listener.get()
            except TimeoutError:
                yield sse.KEEPALIVE
                continue
            if item is None:
                return
            batch = [item]
            while not listener.empty() and len(batch) < _MAX_BATCH:
                more = listener.get_nowait()
                if more is None:
                    yield b"".join(batch)
                    return
                batch.append(more)
            yield b"".join(batch)
    finally:
        if cancel_on_disconnect:
            handle.stop(DISCONNECTED)


def _end_on_failure(task: asyncio.Task[RunResult], listener: Listener) -> None:
    """A run that raised never sent its terminal events: its stream gets an `error` event and ends."""
    failure: BaseException | None = asyncio.CancelledError() if task.cancelled() else task.exception()
    if failure is None:
        return
    if isinstance(failure, UNAVAILABLE):
        # Redis went away under the run: its end is written by the reaper once Redis is back
        metrics.redis_failed("stream")
        listener.put_nowait(sse.unavailable_frame())
    else:
        if not isinstance(failure, (asyncio.CancelledError, ServerError)):
            log.error("run failed", exc_info=failure)
        info = ErrorInfo(code="internal", message="The run failed")
        listener.put_nowait(sse.frame(ErrorEvent(error=info)))
    listener.put_nowait(None)
