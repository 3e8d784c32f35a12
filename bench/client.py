"""A lean HTTP/1.1 client on asyncio streams, for the scenarios where each request's timing or each stream
matters (httpx costs a few hundred microseconds of Python per request; this costs a few tens).

One `Connection` is one keep-alive TCP connection; bodies are read by Content-Length or chunked framing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import NamedTuple
from urllib.parse import urlsplit


class Response(NamedTuple):
    status: int
    headers: dict[str, str]
    body: bytes


class HttpError(Exception):
    pass


def address(base_url: str) -> tuple[str, int]:
    parts = urlsplit(base_url)
    return parts.hostname or "127.0.0.1", parts.port or 80


class Connection:
    def __init__(self, base_url: str, headers: dict[str, str] | None = None) -> None:
        self.host, self.port = address(base_url)
        self.headers = {"host": f"{self.host}:{self.port}", **(headers or {})}
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.reusable = False

    async def open(self) -> Connection:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        self.reusable = True
        return self

    async def close(self) -> None:
        writer, self.writer, self.reader = self.writer, None, None
        self.reusable = False
        if writer is not None:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def __aenter__(self) -> Connection:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def send(
        self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> None:
        if self.writer is None or not self.reusable:
            await self.close()
            await self.open()
        assert self.writer is not None
        lines = [f"{method} {path} HTTP/1.1"]
        for name, value in {**self.headers, **(headers or {})}.items():
            lines.append(f"{name}: {value}")
        if body or method in ("POST", "PUT", "PATCH"):
            lines.append(f"content-length: {len(body)}")
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)

    async def head(self) -> tuple[int, dict[str, str]]:
        assert self.reader is not None
        try:
            raw = await self.reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            self.reusable = False
            raise HttpError("the server closed the connection before answering") from exc
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        if headers.get("connection", "").lower() == "close":
            self.reusable = False
        return status, headers

    async def chunks(self, headers: dict[str, str]) -> AsyncIterator[bytes]:
        """The body as it arrives: one item per chunk (chunked) or per read."""
        reader = self.reader
        assert reader is not None
        try:
            if headers.get("transfer-encoding", "").lower() == "chunked":
                while True:
                    size_line = await reader.readline()
                    if not size_line:
                        raise HttpError("the body ended early")
                    size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                    if size == 0:
                        while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                            pass
                        return
                    data = await reader.readexactly(size + 2)
                    yield data[:-2]
            elif "content-length" in headers:
                remaining = int(headers["content-length"])
                if remaining:
                    yield await reader.readexactly(remaining)
            else:
                self.reusable = False
                while data := await reader.read(65536):
                    yield data
        except BaseException:
            self.reusable = False
            raise

    async def body(self, headers: dict[str, str]) -> bytes:
        return b"".join([chunk async for chunk in self.chunks(headers)])

    async def request(
        self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> Response:
        await self.send(method, path, body, headers)
        status, response_headers = await self.head()
        return Response(status, response_headers, await self.body(response_headers))
