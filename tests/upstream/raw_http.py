"""A raw HTTP/1.1 server on 127.0.0.1 for the tests of `server/upstream/http1/`: each test hands it a
handler that reads requests and writes bytes itself, so it can frame a body any way, stop mid-answer, stay
silent or close at a chosen moment. The server counts connections and requests, and remembers the moment
each connection saw its client go (EOF or reset), the proof that a closed response reached the upstream."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from server.outbound import Outbound
from server.upstream.http1 import Client, Response, Target, Timeouts

Handler = Callable[["Peer"], Awaitable[None]]


class Start(Protocol):
    """Starts a server (stopped when the test ends)."""

    def __call__(self, handler: Handler, tls: ssl.SSLContext | None = None) -> Awaitable[RawServer]: ...


def head(status: int = 200, reason: str = "OK", **headers: str) -> bytes:
    """A status line and headers; `content_length="5"` becomes `content-length: 5`."""
    lines = [f"HTTP/1.1 {status} {reason}"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def sized(body: bytes, status: int = 200, reason: str = "OK", **headers: str) -> bytes:
    """A whole response framed by content-length."""
    return head(status, reason, content_length=str(len(body)), **headers) + body


def chunk(piece: bytes) -> bytes:
    """One frame of a chunked body (an empty piece is the last frame)."""
    return f"{len(piece):x}\r\n".encode() + piece + b"\r\n"


@dataclass
class Request:
    head: bytes
    body: bytes

    @property
    def line(self) -> str:
        return self.head.split(b"\r\n", 1)[0].decode("latin-1")

    def header(self, name: str) -> str | None:
        for raw in self.head.decode("latin-1").split("\r\n")[1:]:
            key, _, value = raw.partition(":")
            if key.strip().lower() == name:
                return value.strip()
        return None


@dataclass
class Peer:
    """One accepted connection, as the handler sees it."""

    server: RawServer
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    #: 0 for the server's first connection, 1 for its second...
    index: int

    async def request(self) -> Request | None:
        """The next whole request, or None when the client closed the connection (its moment is recorded)."""
        try:
            raw = await self.reader.readuntil(b"\r\n\r\n")
            request = Request(raw, b"")
            request.body = await self.reader.readexactly(int(request.header("content-length") or 0))
        except (asyncio.IncompleteReadError, ConnectionError):
            self.server.gone.append(time.monotonic())
            return None
        self.server.requests.append(request)
        return request

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def until_gone(self) -> None:
        """Wait until the client closes the connection; its moment is recorded."""
        with contextlib.suppress(ConnectionError):
            while await self.reader.read(65536):
                pass
        self.server.gone.append(time.monotonic())


@dataclass
class RawServer:
    handler: Handler
    tls: ssl.SSLContext | None = None
    connections: int = 0
    requests: list[Request] = field(default_factory=list)
    #: monotonic times at which a client closed its connection (seen by `Peer.request` or `Peer.until_gone`)
    gone: list[float] = field(default_factory=list)
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def port(self) -> int:
        assert self._server is not None
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    def url(self, path: str = "/v1/x") -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}{path}"

    async def start(self) -> RawServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        peer = Peer(self, reader, writer, self.connections)
        self.connections += 1
        try:
            await self.handler(peer)
        except (ConnectionError, ssl.SSLError):
            pass  # the client went while we wrote: what several tests make it do
        except asyncio.CancelledError:
            pass  # stopped by `stop()`: asyncio's streams would log a cancelled handler as an error
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError, ssl.SSLError):
                await writer.wait_closed()


async def answer_each(peer: Peer, response: bytes) -> None:
    """Keep-alive: the same response to every request on the connection."""
    while await peer.request() is not None:
        await peer.send(response)


async def silent(peer: Peer) -> None:
    """Read the request, never answer, hold the connection open until the client goes."""
    if await peer.request() is not None:
        await peer.until_gone()


@contextlib.asynccontextmanager
async def servers() -> AsyncIterator[Start]:
    """`start(handler, tls=None)` starts a server; every server started is stopped at the end."""
    started: list[RawServer] = []

    async def start(handler: Handler, tls: ssl.SSLContext | None = None) -> RawServer:
        server = await RawServer(handler, tls).start()
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            await server.stop()


async def eventually(check: Callable[[], bool], within: float = 1.0) -> bool:
    """Whether `check()` came true within `within` seconds (polled)."""
    loop = asyncio.get_running_loop()
    until = loop.time() + within
    while not check():
        if loop.time() > until:
            return False
        await asyncio.sleep(0.005)
    return True


def free_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# --- the client's side

TIMEOUTS = Timeouts(connect=2.0, read=2.0, pool=2.0)


def soon(seconds: float = 5.0) -> float:
    """A deadline `seconds` from now, in loop time (what `Client.post` takes)."""
    return asyncio.get_running_loop().time() + seconds


async def post(client: Client, url: str, timeouts: Timeouts = TIMEOUTS, deadline: float = 5.0) -> Response:
    return await client.post(Target.parse(url), {"x-test": "1"}, b'{"q": 1}', timeouts, soon(deadline))


async def body(response: Response) -> bytes:
    """The rest of the body, joined; the response is closed."""
    return b"".join(await pieces(response))


async def pieces(response: Response) -> list[bytes]:
    """The rest of the body as it came, piece by piece; the response is closed."""
    got: list[bytes] = []
    try:
        while (piece := await response.chunk()) is not None:
            got.append(piece)
    finally:
        response.close()
    return got


@contextlib.asynccontextmanager
async def client(max_connections: int = 4, outbound: Outbound | None = None) -> AsyncIterator[Client]:
    pool = Client(max_connections=max_connections, outbound=outbound)
    try:
        yield pool
    finally:
        await pool.aclose()
