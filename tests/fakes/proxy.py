"""An HTTP proxy on 127.0.0.1, on asyncio streams, as corporate networks put in front of the internet.

It answers `CONNECT host:port` with a 200 and pipes the tunnel to the origin both ways, and forwards a
request in absolute form (`POST http://host:port/path`) to its origin in origin form, one request per
connection (it asks the origin to close after its answer, then closes too). Every CONNECT target and every
forwarded URL is recorded, with the Proxy-Authorization that came with it. `credentials` ("user:pass")
makes it answer 407 to a request without them; `refuse` makes it answer that status to every request.
`hosts` maps names to the addresses it connects to, as a proxy's own resolver would: a test can call an
origin by a name only the proxy knows.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import urllib.parse
from dataclasses import dataclass, field

import pytest

#: what the outbound rules read of the environment (each in upper and lower case)
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


def without_proxies(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The environment without the proxies of the machine the tests run on (a test sets its own)."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


#: the headers meant for the proxy, not passed on to the origin
_HOP_BY_HOP = ("proxy-authorization", "proxy-connection", "connection", "keep-alive")


@dataclass
class Asked:
    """One request the proxy received: a CONNECT's `host:port`, or a forwarded request's URL."""

    method: str
    target: str
    authorization: str | None


@dataclass
class FakeProxy:
    credentials: str | None = None
    refuse: int | None = None
    hosts: dict[str, str] = field(default_factory=dict)
    asked: list[Asked] = field(default_factory=list)
    #: where it listens (known once started, and still after it stopped)
    port: int = 0
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    def url(self, userinfo: str = "") -> str:
        return f"http://{userinfo + '@' if userinfo else ''}127.0.0.1:{self.port}"

    @property
    def connects(self) -> list[str]:
        """The targets of the CONNECTs it tunnelled or refused, in order."""
        return [asked.target for asked in self.asked if asked.method == "CONNECT"]

    @property
    def forwarded(self) -> list[str]:
        """The URLs of the absolute-form requests it forwarded or refused, in order."""
        return [asked.target for asked in self.asked if asked.method != "CONNECT"]

    async def __aenter__(self) -> FakeProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._handle(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # a client or origin that went, or the proxy stopping
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        line, *fields = head.removesuffix("\r\n\r\n").split("\r\n")
        method, target, _version = line.split(" ", 2)
        headers = [(name.strip(), value.strip()) for name, _, value in (f.partition(":") for f in fields)]
        authorization = next((v for n, v in headers if n.lower() == "proxy-authorization"), None)
        self.asked.append(Asked(method, target, authorization))
        status = self._refusal(authorization)
        if status is not None:
            challenge = 'proxy-authenticate: Basic realm="fake"\r\n' if status == 407 else ""
            writer.write(f"HTTP/1.1 {status} Refused\r\n{challenge}content-length: 0\r\n\r\n".encode())
            await writer.drain()
            return
        if method == "CONNECT":
            host, _, port = target.rpartition(":")
            origin = await self._open(host.strip("[]"), int(port))
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            url = urllib.parse.urlsplit(target)
            assert url.hostname is not None, f"not an absolute-form request: {line}"
            origin = await self._open(url.hostname, url.port or 80)
            path = (url.path or "/") + (f"?{url.query}" if url.query else "")
            kept = [f"{n}: {v}" for n, v in headers if n.lower() not in _HOP_BY_HOP]
            origin[1].write(
                "\r\n".join([f"{method} {path} HTTP/1.1", *kept, "connection: close", "", ""]).encode()
            )
        await _pipe_both(reader, writer, *origin)

    def _refusal(self, authorization: str | None) -> int | None:
        if self.refuse is not None:
            return self.refuse
        if self.credentials is None:
            return None
        expected = "Basic " + base64.b64encode(self.credentials.encode()).decode()
        return None if authorization == expected else 407

    async def _open(self, host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection(self.hosts.get(host, host), port)


async def _pipe_both(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    origin_reader: asyncio.StreamReader,
    origin_writer: asyncio.StreamWriter,
) -> None:
    """Bytes both ways until either side is done; then both connections close."""
    ways = [
        asyncio.create_task(_pipe(reader, origin_writer)),
        asyncio.create_task(_pipe(origin_reader, writer)),
    ]
    try:
        await asyncio.wait(ways, return_when=asyncio.FIRST_COMPLETED)
    finally:
        origin_writer.close()  # first: the proxy's stop may cancel the wait below
        for way in ways:
            way.cancel()
        await asyncio.gather(*ways, return_exceptions=True)


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
