"""The fake OpenAI-compatible upstream of the bench, running in the bench process: the tests' FakeServer
(tests/fakes/http.py) with the tests' OpenAI chunk scripts (tests/fakes/openai.py).

The server routes the models `bench-*` to it (backend "openai"); the requested model picks the script. Each
request is an `Exchange`, named by the first word of the last user message (a tag the bench puts there), with
the moments it was received, its first body chunk was written, the client disconnected, and it ended, all
on the monotonic clock that the bench's clients use too.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from dataclasses import dataclass, field
from typing import Any, cast

from tests.fakes.http import FakeServer, Script
from tests.fakes.openai import chunk, openai_text_script, script, usage_chunk

#: the exchange the current connection task is serving
_current: contextvars.ContextVar[Exchange | None] = contextvars.ContextVar("bench_exchange", default=None)


@dataclass
class Exchange:
    tag: str
    model: str
    received_at: float
    first_chunk_at: float | None = None
    disconnected_at: float | None = None
    ended_at: float | None = None
    first_chunk: asyncio.Event = field(default_factory=asyncio.Event)
    ended: asyncio.Event = field(default_factory=asyncio.Event)


class _StampingWriter:
    """The connection's writer, noting when the first body chunk goes out (the head is write #1)."""

    def __init__(self, writer: asyncio.StreamWriter, exchange: Exchange) -> None:
        self._writer = writer
        self._exchange = exchange
        self._writes = 0

    @property
    def transport(self) -> asyncio.WriteTransport:
        return self._writer.transport

    def write(self, data: bytes) -> None:
        self._writes += 1
        if self._writes == 2:
            self._exchange.first_chunk_at = time.monotonic()
            self._exchange.first_chunk.set()
        self._writer.write(data)

    async def drain(self) -> None:
        await self._writer.drain()


def words(count: int) -> str:
    return " ".join(f"w{i}" for i in range(count))


def first_token_script(delay: float, count: int = 3) -> Script:
    """The first token `delay` after the request, in the very first body chunk; the rest at once."""
    chunks = [chunk({"role": "assistant", "content": "Hello"})]
    chunks += [chunk({"content": f" w{i}"}) for i in range(count - 1)]
    chunks += [chunk({}, finish="stop"), usage_chunk()]
    return script(chunks, first_chunk_delay=delay)


class BenchUpstream(FakeServer):
    def __init__(self, scripts: dict[str, Script]) -> None:
        super().__init__()
        self.by_model = scripts
        self.exchanges: dict[str, Exchange] = {}
        self.arrived: asyncio.Queue[Exchange] = asyncio.Queue()

    @property
    def chat_url(self) -> str:
        return self.base_url + "/v1/chat/completions"

    async def _respond(
        self, script: Script, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        # FakeServer appended this request just before calling us, with no await in between
        request = self.requests.pop()
        self.requests.clear()
        body: dict[str, Any] = request.json()
        model = str(body.get("model", ""))
        exchange = Exchange(tag=_tag_of(body), model=model, received_at=request.received_at)
        self.exchanges[exchange.tag] = exchange
        self.arrived.put_nowait(exchange)
        _current.set(exchange)
        chosen = self.by_model.get(model, script)
        try:
            await super()._respond(
                chosen, reader, cast(asyncio.StreamWriter, _StampingWriter(writer, exchange))
            )
        finally:
            exchange.ended_at = time.monotonic()
            exchange.ended.set()

    def _record_disconnect(self) -> None:
        super()._record_disconnect()
        exchange = _current.get()
        if exchange is not None and exchange.disconnected_at is None:
            exchange.disconnected_at = self.disconnects[-1]

    def forget(self, tag: str) -> None:
        self.exchanges.pop(tag, None)


def _tag_of(body: dict[str, Any]) -> str:
    messages = body.get("messages") or [{}]
    content = messages[-1].get("content") or ""
    if isinstance(content, list):
        content = " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    parts = str(content).split(maxsplit=1)
    return parts[0] if parts else ""


__all__ = ["BenchUpstream", "Exchange", "Script", "first_token_script", "openai_text_script", "words"]
