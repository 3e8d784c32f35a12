"""Stream responses: the frames of a foreground run as they are made, or of the log."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from litestar.response import Stream

from ..events import sse
from ..runner.handle import DISCONNECTED
from ..runner.service import Started

#: frames sent in one write at most, when a run produces faster than the client reads
_MAX_BATCH = 256


def sse_response(frames: AsyncIterator[bytes]) -> Stream:
    return Stream(frames, media_type="text/event-stream", headers=sse.HEADERS, status_code=200)


async def run_frames(started: Started, keepalive: float, cancel_on_disconnect: bool) -> AsyncIterator[bytes]:
    """Relay a foreground run to its client. If the client goes away first, stop the run (or not)."""
    queue = started.listener
    assert queue is not None
    try:
        while True:
            try:
                async with asyncio.timeout(keepalive):
                    item = await queue.get()
            except TimeoutError:
                yield sse.KEEPALIVE
                continue
            if item is None:
                return
            batch = [item]
            while not queue.empty() and len(batch) < _MAX_BATCH:
                more = queue.get_nowait()
                if more is None:
                    yield b"".join(batch)
                    return
                batch.append(more)
            yield b"".join(batch)
    finally:
        if started.task is not None and not started.task.done() and cancel_on_disconnect:
            started.handle.stop(DISCONNECTED)
