"""A real MCP server for the tests: the `mcp` package's own server (MCPServer) over Streamable HTTP, served
by uvicorn on 127.0.0.1 in a thread of the test process, with its own event loop.

Its tools: `echo(text)` and `add(a, b)` (fast), `slow(seconds)` (sleeps; records whether it finished or was
cancelled), `fail(message)` (raises: an `isError` result), `big(size)` (a text of `size` characters).
Every HTTP request's headers are recorded (`headers_seen`), and so is every tool call, in order (`calls`),
and the end of every POST that carried a `tools/call` (`calls_ended`: the proof that a cancelled call's
request was closed). `require` makes every request without that header value a 401.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass
class Record:
    """What the server saw (written by its thread, read by the test's: lists, appended whole)."""

    headers_seen: list[dict[str, str]] = field(default_factory=list)
    #: (tool name, arguments) of every call that reached a tool, in order
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    #: "finished" or "cancelled", per `slow` call, in order
    slow_outcomes: list[str] = field(default_factory=list)
    #: how many POSTs whose body held a tools/call have ended (answered or closed by the client)
    calls_ended: int = 0


def build(record: Record) -> MCPServer:
    mcp = MCPServer("fake-mcp", log_level="WARNING")

    @mcp.tool(description="Returns its text")
    def echo(text: str) -> str:
        record.calls.append(("echo", {"text": text}))
        return text

    @mcp.tool(description="Adds two numbers")
    def add(a: int, b: int) -> int:
        record.calls.append(("add", {"a": a, "b": b}))
        return a + b

    @mcp.tool(description="Sleeps, then answers")
    async def slow(seconds: float) -> str:
        record.calls.append(("slow", {"seconds": seconds}))
        try:
            await anyio.sleep(seconds)
        except BaseException:
            record.slow_outcomes.append("cancelled")
            raise
        record.slow_outcomes.append("finished")
        return "slept"

    @mcp.tool(description="Always fails")
    def fail(message: str) -> str:
        record.calls.append(("fail", {"message": message}))
        raise ToolError(message)

    @mcp.tool(description="A long text")
    def big(size: int) -> str:
        record.calls.append(("big", {"size": size}))
        return "x" * size

    return mcp


def recording(app: App, record: Record, require: tuple[str, str] | None) -> App:
    """The app, with every request's headers recorded, `require` enforced, and tools/call POSTs' ends."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
        record.headers_seen.append(headers)
        if require is not None and headers.get(require[0].lower()) != require[1]:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        is_call = False

        async def peek() -> Message:
            nonlocal is_call
            message = await receive()
            if message["type"] == "http.request" and b'"tools/call"' in message.get("body", b""):
                is_call = True
            return message

        try:
            await app(scope, peek, send)
        finally:
            if is_call:
                record.calls_ended += 1

    return wrapped


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class RunningMcp:
    url: str
    port: int
    record: Record


@contextmanager
def serving(
    require: tuple[str, str] | None = None, tls: tuple[Path, Path] | None = None
) -> Iterator[RunningMcp]:
    """The server on a free port of 127.0.0.1 while the block runs (`require`: (header, value); `tls`: the
    files of its certificate and key, to serve https)."""
    record = Record()
    mcp = build(record)
    # any Host: the tests reach it by names only their resolver knows (the client connects to the address)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = recording(mcp.streamable_http_app(transport_security=security), record, require)
    port = free_port()
    certificate, key = (str(tls[0]), str(tls[1])) if tls is not None else (None, None)
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", lifespan="on", ssl_certfile=certificate,
        ssl_keyfile=key,
    )  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="fake-mcp", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the fake MCP server did not start")
        time.sleep(0.01)
    try:
        yield RunningMcp(f"{'https' if tls else 'http'}://127.0.0.1:{port}/mcp", port, record)
    finally:
        server.should_exit = True
        thread.join(10)
