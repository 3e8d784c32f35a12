"""A scriptable HTTP/1.1 server on 127.0.0.1, written on asyncio streams for exact control of the framing.

Each request takes the next `Script` from the queue (or the default one): a status, headers, and either a
whole body or a list of chunks sent with chunked transfer encoding, with a time to first chunk, a delay
between chunks, and optionally an abrupt TCP close in the middle. Every request is recorded, and so is the
moment the client went away while a response was still being sent (the proof that a cancel closed the
connection).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, TypedDict, TypeVar

T = TypeVar("T")
REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 429: "Too Many Requests"}


@dataclass
class Script:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    #: a whole body (sent with Content-Length); used when `chunks` is None
    body: bytes = b""
    #: the streamed body, one chunked-encoding frame each
    chunks: list[bytes] | None = None
    content_type: str = "text/event-stream"
    first_chunk_delay: float = 0.0
    chunk_delay: float = 0.0
    #: close the TCP connection after this many chunks, without ending the body
    abort_after: int | None = None
    #: how long the response's head waits (a receiver slow to answer)
    head_delay: float = 0.0


class Knobs(TypedDict, total=False):
    """How a script is answered, besides its body: the fields of `Script` a script builder passes on."""

    status: int
    headers: dict[str, str]
    content_type: str
    first_chunk_delay: float
    chunk_delay: float
    abort_after: int | None


@dataclass
class RecordedRequest:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes
    received_at: float

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def query(self) -> str:
        return self.target.partition("?")[2]

    def json(self) -> Any:
        return json.loads(self.body)


class FakeServer:
    def __init__(self, default: Script | None = None, *, keep_alive: bool = False) -> None:
        """`keep_alive`: serve many requests per connection, as real upstreams do (the bench measures
        connection reuse); a client's going away mid-answer is then seen only when a write fails."""
        self.keep_alive = keep_alive
        self.default = default or Script(status=404, body=b'{"error": {"message": "no script"}}')
        self.scripts: deque[Script] = deque()
        self.requests: list[RecordedRequest] = []
        #: monotonic times at which a client closed its connection before the response was complete
        self.disconnects: list[float] = []
        self.disconnected = asyncio.Event()
        self.completed = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def add(self, *scripts: Script) -> None:
        self.scripts.extend(scripts)

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    async def start(self) -> FakeServer:
        self._server = await asyncio.start_server(self._on_connection, "127.0.0.1", 0)
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def __aenter__(self) -> FakeServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while True:
                request = await self._read_request(reader)
                if request is None:
                    return
                self.requests.append(request)
                await self._answer(request, reader, writer)
                if not self.keep_alive:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _read_request(self, reader: asyncio.StreamReader) -> RecordedRequest | None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        return RecordedRequest(method, target, headers, body, time.monotonic())

    async def _answer(
        self, request: RecordedRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """The next script answers (a subclass may answer some requests itself)."""
        await self._respond(self.scripts.popleft() if self.scripts else self.default, reader, writer)

    def _write_head(self, writer: asyncio.StreamWriter, status: int, headers: dict[str, str]) -> None:
        head = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}"]
        connection = "keep-alive" if self.keep_alive else "close"
        headers = {"connection": connection, **{k.lower(): v for k, v in headers.items()}}
        head += [f"{name}: {value}" for name, value in headers.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))

    async def _respond(
        self, script: Script, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        if script.head_delay:
            await asyncio.sleep(script.head_delay)
        headers = {k.lower(): v for k, v in script.headers.items()}
        if script.chunks is None:
            headers.setdefault("content-type", "application/json")
            headers["content-length"] = str(len(script.body))
        else:
            headers.setdefault("content-type", script.content_type)
            headers["transfer-encoding"] = "chunked"
        self._write_head(writer, script.status, headers)
        if script.chunks is None:
            writer.write(script.body)
            await writer.drain()
            self.completed += 1
            return
        await writer.drain()
        # the client sends nothing more; EOF on its side of the socket means it closed the connection (on a
        # kept-alive connection the next request may come at once: not read here)
        gone: asyncio.Future[bytes] = (
            asyncio.get_running_loop().create_future()
            if self.keep_alive
            else asyncio.ensure_future(reader.read(1))
        )
        try:
            finished = await self._send_chunks(script, writer, gone)
        finally:
            gone.cancel()
        if finished:
            self.completed += 1

    async def _send_chunks(
        self, script: Script, writer: asyncio.StreamWriter, gone: asyncio.Future[bytes]
    ) -> bool:
        assert script.chunks is not None
        for index, chunk in enumerate(script.chunks):
            if script.abort_after is not None and index >= script.abort_after:
                writer.transport.abort()  # an abrupt close: no terminating chunk
                return False
            delay = script.first_chunk_delay if index == 0 else script.chunk_delay
            if delay:
                await asyncio.wait({gone}, timeout=delay)
            if gone.done():
                self._record_disconnect()
                return False
            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            try:
                await writer.drain()
            except ConnectionError:
                self._record_disconnect()
                return False
        if script.abort_after is not None and script.abort_after >= len(script.chunks):
            writer.transport.abort()
            return False
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True

    def _record_disconnect(self) -> None:
        self.disconnects.append(time.monotonic())
        self.disconnected.set()


def sse(data: Any, event: str | None = None) -> bytes:
    """One SSE event with a JSON (or raw string) payload, LF framed."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    prefix = f"event: {event}\n" if event else ""
    return f"{prefix}data: {payload}\n\n".encode()


def json_error(status: int, body: Any, headers: dict[str, str] | None = None) -> Script:
    return Script(status=status, body=json.dumps(body).encode(), headers=headers or {})


async def drain(stream: AsyncIterator[T]) -> list[T]:
    """Everything an async iterator yields (e.g. a backend's events)."""
    return [item async for item in stream]
