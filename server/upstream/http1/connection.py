"""One HTTP/1.1 connection to an upstream: a request written whole, its response parsed as bytes arrive,
the body held for one reader that waits with a timer of its own."""

from __future__ import annotations

import asyncio
import collections

import httptools

from .errors import ConnectionBroken, HttpError, ReadTimedOut

#: body bytes held for a slow reader before the socket stops being read (the upstream then waits on TCP)
_HIGH_WATER = 256 * 1024
_LOW_WATER = _HIGH_WATER // 4


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(ReadTimedOut("no bytes from the upstream within the read timeout"))


class Connection(asyncio.Protocol):
    """A connection and the response being read on it. httptools calls the `on_*` methods from inside
    `data_received`; the reader is woken by a future, so one chunk costs no task switch beyond its own."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.closed = False
        #: (scheme, host, port): which pool list it goes back to
        self.origin: tuple[str, str, int] = ("", "", 0)
        self.idle_since = 0.0
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False
        self.reset()

    def reset(self) -> None:
        """Ready for the next request on this connection."""
        self._parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.reason = ""
        self.headers: dict[str, str] = {}
        self.head_done = False
        self._interim = False
        self.complete = False
        self.keep_alive = False
        #: any byte of this response arrived (a reused connection that broke before one may be retried)
        self.received = False
        self._delimited_by_close = False
        self._chunks: collections.deque[bytes] = collections.deque()
        self._buffered = 0
        self._error: HttpError | None = None

    # --- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream transport: TCP or TLS

    def data_received(self, data: bytes) -> None:
        self.received = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(ConnectionBroken(f"the upstream's answer is not valid HTTP/1.1: {exc}"))
            self.close()

    def eof_received(self) -> bool:
        return False  # close our side too; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.complete or self._error is not None:
            self._wake()
        elif self.head_done and self._delimited_by_close and exc is None:
            self.complete = True  # a body without length or chunks ends when the connection does
            self._wake()
        else:
            detail = f": {exc}" if exc is not None else ""
            self._fail(ConnectionBroken(f"the upstream closed the connection before the end{detail}"))

    # --- httptools callbacks

    def on_status(self, status: bytes) -> None:
        self.reason = status.decode("latin-1")

    def on_header(self, name: bytes, value: bytes) -> None:
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        self.headers[key] = f"{self.headers[key]}, {text}" if key in self.headers else text

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if 100 <= status < 200:
            # an interim answer (103 Early Hints, a 100 we did not ask for): the final one follows
            self._interim = True
            self.headers = {}
            return
        self.status = status
        self.head_done = True
        chunked = "chunked" in self.headers.get("transfer-encoding", "")
        self._delimited_by_close = not chunked and "content-length" not in self.headers
        self._wake()

    def on_body(self, body: bytes) -> None:
        self._chunks.append(body)
        self._buffered += len(body)
        if self._buffered > _HIGH_WATER and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        if self._interim:
            self._interim = False
            return
        self.complete = True
        self.keep_alive = self._parser.should_keep_alive()
        self._wake()

    # --- the caller's side

    def send(self, data: bytes) -> None:
        if self.closed or self.transport is None or self.transport.is_closing():
            raise ConnectionBroken("the connection closed before the request was sent")
        self.transport.write(data)

    async def head(self, until: float) -> None:
        """Wait for the status line and headers (`until`: the loop time the wait may last to)."""
        while not self.head_done:
            await self._wait(until)

    async def chunk(self, until: float) -> bytes | None:
        """The next piece of the body, or None at its end."""
        while not self._chunks:
            if self.complete:
                return None
            await self._wait(until)
        chunk = self._chunks.popleft()
        self._buffered -= len(chunk)
        if self._paused and self._buffered < _LOW_WATER and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return chunk

    def reusable(self) -> bool:
        """Its response was read to the end and both sides keep the connection."""
        return self.complete and self.keep_alive and not self.closed and not self._chunks

    def close(self) -> None:
        """Close at once (a cancel: the upstream sees its client go and stops generating)."""
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    async def _wait(self, until: float) -> None:
        if self._error is not None:
            raise self._error
        waiter = self._waiter = self.loop.create_future()
        timer = self.loop.call_at(until, _expire, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _fail(self, error: HttpError) -> None:
        if self._error is None:
            self._error = error
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)
