"""The streaming requests of scenarios 5 and 6: where each goes and how its stream is read and counted."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from ..client import Connection
from ..procs import WebServer
from .common import CREATE, payload

DELTA = b"event: step.delta\n"
COMPLETED = b"event: interaction.completed\n"
UPSTREAM_DELTA = b'"delta":{"content":'
UPSTREAM_DONE = b"data: [DONE]"


@dataclass(frozen=True)
class Endpoint:
    """Where a streaming request goes, its body for a tag, the marker counted in its stream (one per
    delta) and the one that ends it."""

    server: WebServer
    path: str
    body_of: Callable[[str], bytes]
    marker: bytes
    end: bytes


def create_endpoint(server: WebServer, model: str, **extra: Any) -> Endpoint:
    """A streamed create on our server: step.delta events up to interaction.completed."""
    return Endpoint(
        server,
        CREATE,
        lambda tag: payload(model=model, input=f"{tag} go", stream=True, **extra),
        DELTA,
        COMPLETED,
    )


def relay_endpoint(server: WebServer, model: str) -> Endpoint:
    """The baseline's byte relay of the same upstream stream: its chunks up to [DONE], unparsed."""
    return Endpoint(
        server,
        "/relay",
        lambda tag: payload(model=model, stream=True, messages=[{"role": "user", "content": f"{tag} go"}]),
        UPSTREAM_DELTA,
        UPSTREAM_DONE,
    )


class _Counted:
    """Counts a marker in a byte stream whose reads may split it."""

    def __init__(self, marker: bytes) -> None:
        self.marker = marker
        self.count = 0
        self._tail = b""

    def feed(self, data: bytes) -> int:
        buffer = self._tail + data
        found = buffer.count(self.marker)
        self.count += found
        self._tail = buffer[-(len(self.marker) - 1) :]
        return found


async def stream(
    conn: Connection, endpoint: Endpoint, tag: str, tail: list[bytes] | None = None
) -> AsyncIterator[tuple[float, int, bool]]:
    """Send one streaming request; yield (time, markers in this read, end seen) per read. Non-200 raises.
    `tail` keeps the last read, to say how a stream that ended early ended."""
    await conn.send("POST", endpoint.path, endpoint.body_of(tag))
    status, headers = await conn.head()
    if status != 200:
        text = (await conn.body(headers))[:300]
        raise RuntimeError(f"status {status}: {text!r}")
    counted, ending = _Counted(endpoint.marker), _Counted(endpoint.end)
    async for data in conn.chunks(headers):
        now = time.monotonic()
        if tail is not None:
            tail[:] = [data]
        found = counted.feed(data)
        yield now, found, ending.feed(data) > 0
