"""The Chat Completions stream's grammar, the one place it lives: the Interactions event log's frames (as
protocol/sse.py frames them, the bytes an EventStream yields) rendered as `chat.completion.chunk`s.

    interaction.created                  the role chunk: delta {role: assistant, content: ""}
    step.start model_output (+ text)     content chunks
    step.delta text (model output)       a content chunk
    step.start function_call             a tool_calls delta: {index, id, type, function: {name, arguments}}
    step.delta arguments_delta           a tool_calls delta: {index, function: {arguments: <the piece>}}
    step.stop function_call              `{}` as its arguments if none came (a call without arguments)
    interaction.completed                the finish chunk (delta {}, finish_reason as encode.py maps the
                                         status), the usage chunk (choices [], with include_usage)
    error (content_blocked)              the finish chunk with content_filter, the usage chunk
    error (any other)                    `data: {"error": {...}}`, which the SDK raises
    keep-alive comments                  passed on (proxies keep the connection)

Thoughts, server-side tool steps and media have no chunk. The stream ends with `data: [DONE]`.
Frames are parsed here (a private parse: protocol/sse.py has none yet): a relay may hand several frames
joined in one write.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Final

import msgspec

from ...protocol.base import dec_hook
from ...protocol.codec import json_encoder
from ...protocol.content import TextContent
from ...protocol.deltas import ArgumentsDelta, TextDelta
from ...protocol.events import (
    AnyEvent,
    ErrorEvent,
    InteractionCompleted,
    InteractionCreated,
    InteractionStatusUpdate,
    StepDelta,
    StepStart,
    StepStop,
)
from ...protocol.interaction import ErrorInfo, Usage
from ...protocol.steps import FunctionCallStep, ModelOutputStep
from . import encode
from . import objects as ob

DONE: Final = b"data: [DONE]\n\n"
KEEPALIVE: Final = b": keep-alive\n\n"
_decoder = msgspec.json.Decoder(AnyEvent, dec_hook=dec_hook)


def parse(item: bytes) -> list[AnyEvent | None]:
    """The events of one write of a stream (frames joined); None for a comment (a keep-alive)."""
    found: list[AnyEvent | None] = []
    for frame in item.split(b"\n\n"):
        if not frame.strip():
            continue
        if frame.startswith(b":"):
            found.append(None)
            continue
        data = b"".join(line[5:].lstrip() for line in frame.split(b"\n") if line.startswith(b"data:"))
        found.append(_decoder.decode(data))
    return found


class ChunkStream:
    """One completion's chunks, fed the run's frames in order (pure: the caller does the I/O)."""

    def __init__(self, completion_id: str, model: str, created: int, *, include_usage: bool) -> None:
        self.id = completion_id
        self.model = model
        self.created = created
        self.include_usage = include_usage
        self.done = False
        self.usage: Usage | None = None
        #: indexes of the model output steps
        self.texts: set[int] = set()
        #: the function calls by their step's index
        self.calls: dict[int, _Call] = {}
        self.started = False

    def feed(self, item: bytes) -> list[bytes]:
        out: list[bytes] = []
        for event in parse(item):
            if self.done:
                break
            out += [KEEPALIVE] if event is None else self.event(event)
        return out

    def event(self, event: AnyEvent) -> list[bytes]:
        out = [] if self.started or isinstance(event, InteractionCreated) else self._role()
        if isinstance(event, InteractionCreated):
            shown = event.interaction
            self.id = shown.id or self.id
            self.created = encode.seconds(shown.created) or self.created
            self.model = shown.model or shown.agent or self.model
            out += self._role()
        elif isinstance(event, StepStart):
            out += self._start(event)
        elif isinstance(event, StepDelta):
            out += self._delta(event)
        elif isinstance(event, StepStop):
            out += self._stop(event.index)
        elif isinstance(event, InteractionStatusUpdate):
            self.usage = event.usage or self.usage
        elif isinstance(event, InteractionCompleted):
            final = event.interaction
            reason = encode.finish_reason(final.status, bool(self.calls))
            out += self._finish(reason or "stop", final.usage or self.usage)
        elif isinstance(event, ErrorEvent):
            out += self._error(event.error)
        return out

    def _role(self) -> list[bytes]:
        self.started = True
        return [self._chunk(ob.ChoiceDelta(role="assistant", content="", refusal=None))]

    def _start(self, event: StepStart) -> list[bytes]:
        step = event.step
        if isinstance(step, ModelOutputStep):
            self.texts.add(event.index)
            text = "".join(item.text for item in step.content if isinstance(item, TextContent))
            return [self._chunk(ob.ChoiceDelta(content=text))] if text else []
        if isinstance(step, FunctionCallStep):
            given = encode.arguments(step) if step.arguments else ""
            call = self.calls[event.index] = _Call(len(self.calls), argued=bool(given))
            function = ob.ChoiceDeltaFunction(name=step.name, arguments=given)
            delta = ob.ChoiceDeltaToolCall(index=call.index, id=step.id, type="function", function=function)
            return [self._chunk(ob.ChoiceDelta(tool_calls=[delta]))]
        return []

    def _delta(self, event: StepDelta) -> list[bytes]:
        delta = event.delta
        if isinstance(delta, TextDelta) and event.index in self.texts and delta.text:
            return [self._chunk(ob.ChoiceDelta(content=delta.text))]
        if isinstance(delta, ArgumentsDelta) and event.index in self.calls and delta.arguments:
            return [self._arguments(event.index, delta.arguments)]
        return []

    def _stop(self, index: int) -> list[bytes]:
        call = self.calls.get(index)
        if call is None or call.argued:
            return []
        return [self._arguments(index, "{}")]

    def _arguments(self, index: int, piece: str) -> bytes:
        call = self.calls[index]
        call.argued = True
        delta = ob.ChoiceDeltaToolCall(index=call.index, function=ob.ChoiceDeltaFunction(arguments=piece))
        return self._chunk(ob.ChoiceDelta(tool_calls=[delta]))

    def _finish(self, reason: ob.FinishReason, usage: Usage | None) -> list[bytes]:
        self.done = True
        out = [self._chunk(ob.ChoiceDelta(), finish_reason=reason)]
        if self.include_usage:
            chunk = ob.ChatCompletionChunk(
                id=self.id, created=self.created, model=self.model, choices=[], usage=encode.usage(usage)
            )
            out.append(_data(chunk))
        return [*out, DONE]

    def _error(self, error: ErrorInfo) -> list[bytes]:
        if error.code == encode.BLOCKED:
            return self._finish("content_filter", self.usage)
        self.done = True
        body = ob.StreamErrorBody(error=ob.StreamError(message=error.message, code=error.code))
        return [_data(body), DONE]

    def _chunk(self, delta: ob.ChoiceDelta, finish_reason: ob.FinishReason | None = None) -> bytes:
        choice = ob.ChunkChoice(delta=delta, finish_reason=finish_reason)
        return _data(
            ob.ChatCompletionChunk(id=self.id, created=self.created, model=self.model, choices=[choice])
        )


class _Call:
    """A function call of the stream: its index in `tool_calls`, and whether it had arguments yet."""

    __slots__ = ("argued", "index")

    def __init__(self, index: int, *, argued: bool) -> None:
        self.index = index
        self.argued = argued


def _data(value: msgspec.Struct) -> bytes:
    return b"data: " + json_encoder.encode(value) + b"\n\n"


async def render(frames: AsyncIterator[bytes], chunks: ChunkStream) -> AsyncIterator[bytes]:
    """The chunks of `frames`, a write per write of the run's. `frames` is read to its end, past the
    completion's last chunk (the run settles meanwhile); closing this closes `frames`, which stops the run
    as the Interactions stream's client going away does."""
    try:
        async for item in frames:
            out = chunks.feed(item)
            if out:
                yield b"".join(out)
        if not chunks.done:
            # the run's stream ended without its end (it cannot: the relay ends every stream with one)
            yield _data(ob.StreamErrorBody(error=ob.StreamError(message="The stream ended early"))) + DONE
    finally:
        close = getattr(frames, "aclose", None)
        if close is not None:
            await close()
