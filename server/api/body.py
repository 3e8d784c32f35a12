"""Reading a request body: no larger than the limit (413), and whole within its deadline (408).

granian times out slow headers but not slow bodies: a stalled upload would hold its connection for ever.

A body over the limit is still read, and dropped, before the 413 is answered, up to DRAIN_BYTES past the
limit and within the body's deadline. Answered at once, the 413 reached a client still uploading as a
connection closed under its write (granian drops the unread body), and httpx's async transport (the
official SDK's `client.aio`) cannot read a reply once a write failed: the SDK raised APIConnectionError
where its sync client, curl and the JS SDK read the 413. Reading a body to drop it costs about 0.6 ms of
this process's CPU per MiB (loopback), 40 ms for DRAIN_BYTES; past the bound the 413 is answered at once and
the connection closed, as before.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

from litestar import Request

from ..protocol.codec import convert, decode_json
from ..sections import HttpSettings
from .errors import ApiError

T = TypeVar("T")

#: how far past the limit a body is read (and dropped) to answer its 413 once the client is done sending
DRAIN_BYTES = 64 * 1024 * 1024


class _BodyDeadlines:
    """The request bodies a process is reading, each with its deadline (granian times out slow headers but
    not slow bodies: a stalled upload would hold its connection forever). One timer looks for late ones
    while there are any, rather than a timer per request: `asyncio.timeout` around each read cost about 5%
    of a create's CPU."""

    #: how often the timer looks: a late body is cut off at most this much after its deadline
    SWEEP_SECONDS = 0.5

    def __init__(self) -> None:
        self.reading: dict[asyncio.Task[Any], float] = {}
        self.late: set[asyncio.Task[Any]] = set()
        self.loop: asyncio.AbstractEventLoop | None = None

    def add(self, task: asyncio.Task[Any], seconds: float) -> None:
        loop = task.get_loop()
        self.reading[task] = loop.time() + seconds
        if self.loop is not loop:
            self.loop = loop
            loop.call_later(self.SWEEP_SECONDS, self._sweep, loop)

    def done(self, task: asyncio.Task[Any]) -> None:
        del self.reading[task]
        self.late.discard(task)

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        now = loop.time()
        for task, deadline in list(self.reading.items()):
            if deadline <= now and task.get_loop() is loop and task not in self.late:
                self.late.add(task)
                task.cancel()
        if self.reading and self.loop is loop:
            loop.call_later(self.SWEEP_SECONDS, self._sweep, loop)
        elif self.loop is loop:
            self.loop = None


_BODY_DEADLINES = _BodyDeadlines()


def _too_large(limit: int, *, close: bool) -> ApiError:
    headers = {"connection": "close"} if close else None
    return ApiError(413, f"The request body is larger than the limit of {limit} bytes", headers)


async def read_body(request: Request[Any, Any, Any], limit: int, within: float) -> bytes:
    length = request.headers.get("content-length")
    declared = int(length) if length and length.isdigit() else 0
    if declared > limit + DRAIN_BYTES:
        raise _too_large(limit, close=True)
    chunks: list[bytes] = []
    size = 0
    task = asyncio.current_task()
    assert task is not None
    _BODY_DEADLINES.add(task, within)
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit + DRAIN_BYTES:
                raise _too_large(limit, close=True)
            if size <= limit and declared <= limit:
                chunks.append(chunk)
            else:
                chunks.clear()  # over the limit: read on to the end, keeping nothing
    except asyncio.CancelledError:
        if task not in _BODY_DEADLINES.late:
            raise
        task.uncancel()
        if size > limit or declared > limit:
            raise _too_large(limit, close=True) from None
        message = f"The request body did not arrive within {within:g} s (http.body_read_timeout_seconds)"
        raise ApiError(408, message, {"connection": "close"}) from None
    finally:
        _BODY_DEADLINES.done(task)
    if size > limit or declared > limit:
        raise _too_large(limit, close=False)
    return b"".join(chunks)


async def read_struct(request: Request[Any, Any, Any], http: HttpSettings, tp: type[T]) -> T:
    """The JSON body as `tp` (an empty body is `{}`), with a 400 naming a bad field."""
    raw = await read_body(request, http.max_body_bytes, http.body_read_timeout_seconds)
    return convert(decode_json(raw) if raw.strip() else {}, tp)
