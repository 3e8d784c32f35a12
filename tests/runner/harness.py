"""What the in-process tests of the runner and the event log drive the runtime with.

`ScriptedBackend` is a `Backend` (server/upstream/base.py) whose answer the test writes as it goes: it
yields the `UpstreamEvent`s the test feeds it and waits, with the upstream call held open, until the test
feeds more or ends it. The test can tell when a call started, how much of it the runner took, and whether
it was closed (what closing an upstream HTTP connection is for a real backend).

`create` sends a create as the API handler does (the body decoded by the API's own decoder), and `Frames`
reads an event stream's frames as a client would.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from server.protocol import sse
from server.protocol.codec import decode_create
from server.protocol.content import TextContent
from server.protocol.deltas import TextDelta
from server.protocol.interaction import Usage
from server.protocol.steps import ModelOutputStep, Step
from server.runner.replies import EventStream, Reply
from server.runtime import Runtime
from server.upstream.base import (
    Finished,
    StepDelta,
    StepEnded,
    StepStarted,
    UpstreamError,
    UpstreamEvent,
    UpstreamRequest,
    UsageReported,
)

#: what a test feeds: an event to yield, an error to raise, or None for the end of the answer
Feed = UpstreamEvent | UpstreamError | None


class Call:
    """One upstream call: its request, the events fed to it, and what became of it."""

    def __init__(self, request: UpstreamRequest) -> None:
        self.request = request
        self.feed: asyncio.Queue[Feed] = asyncio.Queue()
        #: events the runner has taken
        self.taken = 0
        self.closed = asyncio.Event()

    def text(self, *words: str) -> None:
        """A model_output step's text, a delta per word (the step is started on the first call)."""
        if self.taken == 0 and self.feed.empty():
            self.feed.put_nowait(StepStarted(step=ModelOutputStep()))
        for word in words:
            self.feed.put_nowait(StepDelta(delta=TextDelta(text=word)))

    def finish(self, status: str = "completed", output_words: int = 1) -> None:
        """End the step and the answer, with a usage report."""
        self.feed.put_nowait(StepEnded())
        self.feed.put_nowait(UsageReported(usage=Usage(total_output_tokens=output_words)))
        self.feed.put_nowait(Finished(status=status))
        self.feed.put_nowait(None)

    def fail(self, error: UpstreamError) -> None:
        self.feed.put_nowait(error)


class ScriptedBackend:
    name = "scripted"

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._started: asyncio.Queue[Call] = asyncio.Queue()

    def check(self, request: UpstreamRequest) -> None:
        return None

    async def aclose(self) -> None:
        return None

    async def next_call(self, within: float = 10.0) -> Call:
        """The next upstream call the runner makes (waiting for it)."""
        async with asyncio.timeout(within):
            return await self._started.get()

    async def stream(self, request: UpstreamRequest) -> AsyncGenerator[UpstreamEvent, None]:
        call = Call(request)
        self.calls.append(call)
        self._started.put_nowait(call)
        try:
            while True:
                item = await call.feed.get()
                if item is None:
                    return
                if isinstance(item, UpstreamError):
                    raise item
                call.taken += 1
                yield item
        finally:
            call.closed.set()


async def create(
    runtime: Runtime, tenant: str, body: dict[str, Any], *, idempotency_key: str | None = None
) -> Reply | EventStream:
    raw = json.dumps(body).encode()
    request, steps, warnings = decode_create(raw)
    return await runtime.creator.create(
        tenant, request, steps, warnings, idempotency_key=idempotency_key, body=raw
    )


async def reply_of(runtime: Runtime, tenant: str, body: dict[str, Any], **options: Any) -> Reply:
    reply = await create(runtime, tenant, body, **options)
    assert isinstance(reply, Reply), reply
    return reply


async def stream_of(runtime: Runtime, tenant: str, body: dict[str, Any], **options: Any) -> Frames:
    reply = await create(runtime, tenant, body, **options)
    assert isinstance(reply, EventStream), reply
    return Frames(reply.frames)


def parse(chunk: bytes) -> list[dict[str, Any]]:
    """The events of a chunk of SSE frames (keep-alives skipped), as JSON."""
    found = []
    for frame in chunk.split(b"\n\n"):
        if not frame or frame.startswith(b":"):
            continue
        head, _, data = frame.partition(b"\ndata: ")
        event: dict[str, Any] = json.loads(data)
        assert head == b"event: " + event["event_type"].encode(), frame
        found.append(event)
    return found


class Frames:
    """A stream's frames as its client reads them, event by event."""

    def __init__(self, frames: AsyncIterator[bytes]) -> None:
        self.frames = frames
        self.events: list[dict[str, Any]] = []
        self.raw: list[bytes] = []
        self.ended = False

    async def next(self, within: float = 10.0) -> bool:
        """Read one more chunk; False once the stream has ended."""
        try:
            async with asyncio.timeout(within):
                chunk = await anext(self.frames)
        except StopAsyncIteration:
            self.ended = True
            return False
        if chunk != sse.KEEPALIVE:
            self.raw.append(chunk)
        self.events += parse(chunk)
        return True

    async def until(self, event_type: str, count: int = 1, within: float = 10.0) -> None:
        """Read until `count` events of `event_type` have come."""
        async with asyncio.timeout(within):
            while self.count(event_type) < count:
                assert await self.next(within), f"the stream ended before {count} {event_type}"

    async def rest(self, within: float = 10.0) -> list[dict[str, Any]]:
        """Read to the end of the stream."""
        async with asyncio.timeout(within):
            while await self.next(within):
                pass
        return self.events

    async def close(self) -> None:
        """The client goes away."""
        aclose = getattr(self.frames, "aclose", None)
        if aclose is not None:
            await aclose()

    def count(self, event_type: str) -> int:
        return sum(1 for e in self.events if e["event_type"] == event_type)

    def text(self) -> str:
        return text_of(self.events)


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"].get("text", "") for e in events if e["event_type"] == "step.delta")


def steps_text(steps: list[Step]) -> str:
    """The text of the model_output steps of a record's output."""
    return "".join(
        item.text
        for step in steps
        if isinstance(step, ModelOutputStep)
        for item in step.content
        if isinstance(item, TextContent)
    )
