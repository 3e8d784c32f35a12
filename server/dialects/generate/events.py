"""streamGenerateContent's grammar, the one place it lives: our event log's frames as a stream of
`GenerateContentResponse` chunks, each what Gemini streams, pure.

    step.start of model_output        its content, if it holds any, as a chunk
    step.delta text                   a chunk of one text part
    step.delta thought_summary        a chunk of one part {text, thought: true}
    step.delta thought_signature      held, and given to the next part (or to an empty text part at the
                                      end), as encode.py does for a whole response
    step.stop of a function_call      a chunk of one part {functionCall: {name, args}} (its arguments
                                      whole: Gemini streams a call whole)
    interaction.completed             the last chunk: finishReason, usageMetadata
    error                             a chunk `{"error": {code, message, status}}`, the stream's end

Every chunk carries `modelVersion` and `responseId`. Two framings (`render`): with `alt=sse`, each chunk
is an SSE event `data: <json>` (no `[DONE]`: the body ends); without it, one JSON array of the chunks,
written as they come.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import msgspec

from ...protocol import sse
from ...protocol.codec import json_encoder
from ...protocol.content import TextContent
from ...protocol.deltas import ArgumentsDelta, TextDelta, ThoughtSignatureDelta, ThoughtSummaryDelta
from ...protocol.events import ErrorEvent, StepDelta, StepStart, StepStop
from ...protocol.interaction import ErrorInfo, Usage
from ...protocol.steps import FunctionCallStep, ModelOutputStep, ThoughtStep
from . import encode, wire


class _Piece(msgspec.Struct, gc=False):
    type: str
    #: a text delta's text as it is in the frame (JSON): it goes into the chunk as it is
    text: msgspec.Raw = msgspec.Raw()


class _PieceFrame(msgspec.Struct, gc=False):
    index: int
    delta: _Piece


class _StepHead(msgspec.Struct, gc=False):
    type: str
    content: list[msgspec.Raw] | None = None


class _StartFrame(msgspec.Struct, gc=False):
    step: _StepHead


class _Ending(msgspec.Struct, gc=False):
    """What the last chunk says of the completed interaction (encode.Ended): its steps, the whole answer
    again, are left unread."""

    status: str
    usage: Usage | None = None
    errors: list[ErrorInfo] | None = None


class _EndFrame(msgspec.Struct, gc=False):
    interaction: _Ending


_pieces = msgspec.json.Decoder(_PieceFrame)
_starts = msgspec.json.Decoder(_StartFrame)
_ends = msgspec.json.Decoder(_EndFrame)
_START_FRAME = b"event: step.start\n"
_END_FRAME = b"event: interaction.completed\n"
#: the steps whose start a chunk may say something of (model_output only when it holds content)
_STARTS_READ = frozenset({"model_output", "thought", "function_call"})
_DELTA_FRAME = b"event: step.delta\n"
_DATA_AT = len(_DELTA_FRAME + b"data: ")
_EMPTY = msgspec.Raw(b'""')
#: the frames no chunk says anything of (the end's status comes again with interaction.completed), and a
#: step's stop, which only a function call's needs
_UNREAD = (b"event: interaction.created\n", b"event: interaction.status_update\n")
_STOP_FRAME = b"event: step.stop\n"
#: a chunk of one text part, as json_encoder makes it of the Struct, up to the text
_TEXT_HEAD = b'{"candidates":[{"content":{"role":"model","parts":[{"text":'
#: the last chunk, up to its finish reason
_END_HEAD = b'{"candidates":[{"finishReason":"'


class Chunks:
    """One stream's state: the response's id and model, the call being streamed, a held signature.
    `feed` answers each chunk as its JSON; a text delta's chunk is made from the frame's bytes (most of a
    stream), byte for byte what the Struct would encode to (tests/generate/test_generate_events.py)."""

    def __init__(self, response_id: str, model: str) -> None:
        self.response_id, self.model = response_id, model
        self.ended = False
        self._calls: dict[int, tuple[str, list[str]]] = {}
        self._signature: str | None = None
        model_version = b'"modelVersion":%s,' % json_encoder.encode(model) if model else b""
        #: every chunk's end: its model and id
        self._ids = model_version + b'"responseId":' + json_encoder.encode(response_id) + b"}"
        self._text_tail = b'}]},"index":0}],' + self._ids

    def feed(self, chunk: bytes) -> list[bytes]:
        out: list[bytes] = []
        for part in chunk.split(b"\n\n"):
            if not part or part[:1] == b":" or self.ended:
                continue
            if part.startswith(_DELTA_FRAME) and self._signature is None:
                delta = _pieces.decode(part[_DATA_AT:]).delta
                if delta.type == "text":
                    if delta.text and delta.text != _EMPTY:
                        out.append(b"%b%b%b" % (_TEXT_HEAD, delta.text, self._text_tail))
                    continue
            elif part.startswith(_UNREAD) or (part.startswith(_STOP_FRAME) and not self._calls):
                continue  # nothing of these is in a chunk: not even read
            elif part.startswith(_START_FRAME) and _says_nothing(part):
                continue
            elif part.startswith(_END_FRAME):
                self.ended = True
                out.append(self._end(_ends.decode(part.partition(b"\ndata: ")[2]).interaction))
                continue
            made = self._event(sse.parse(part))
            if made is not None:
                out.append(json_encoder.encode(made))
        return out

    def _event(self, event: object) -> wire.GenerateContentResponse | None:
        if isinstance(event, StepDelta):
            return self._delta(event.index, event.delta)
        if isinstance(event, StepStart):
            if isinstance(event.step, FunctionCallStep):
                args = [json.dumps(event.step.arguments)] if event.step.arguments else []
                self._calls[event.index] = (event.step.name, args)
            elif isinstance(event.step, ThoughtStep):
                # a signature rides on the next part; a summary already there streams as a thought part
                self._signature = event.step.signature or self._signature
                return self._parts(encode.step_parts(msgspec.structs.replace(event.step, signature=None)))
            elif isinstance(event.step, ModelOutputStep) and event.step.content:
                return self._parts(encode.step_parts(event.step))
            return None
        if isinstance(event, StepStop):
            return self._call_end(event.index)
        if isinstance(event, ErrorEvent):
            self.ended = True
            return self.error(event.error)
        return None

    def _delta(self, index: int, delta: object) -> wire.GenerateContentResponse | None:
        if isinstance(delta, TextDelta):
            return self._parts([wire.Part(text=delta.text)]) if delta.text else None
        if isinstance(delta, ThoughtSummaryDelta) and isinstance(delta.content, TextContent):
            return self._parts([wire.Part(text=delta.content.text, thought=True)])
        if isinstance(delta, ThoughtSignatureDelta):
            self._signature = delta.signature
        elif isinstance(delta, ArgumentsDelta) and index in self._calls:
            self._calls[index][1].append(delta.arguments)
        return None

    def _call_end(self, index: int) -> wire.GenerateContentResponse | None:
        call = self._calls.pop(index, None)
        if call is None:
            return None
        name, fragments = call
        text = "".join(fragments)
        args = json.loads(text) if text else {}
        return self._parts([wire.Part(function_call=wire.FunctionCall(name=name, args=args))])

    def _parts(self, parts: list[wire.Part]) -> wire.GenerateContentResponse | None:
        if not parts:
            return None
        if self._signature is not None:
            parts[0].thought_signature, self._signature = self._signature, None
        candidate = wire.Candidate(content=wire.Content(role="model", parts=parts), index=0)
        return self._chunk([candidate])

    def _end(self, end: _Ending) -> bytes:
        """The last chunk: a failure's error, or the finish reason and usage (with a held signature)."""
        failed = encode.failure(end)
        if failed is not None:
            return json_encoder.encode(self.error(failed))
        reason = encode.finish_reason(end)
        usage = encode.usage_metadata(end.usage)
        if self._signature is None and reason is not None:
            # what the Struct below encodes to (tests/generate/test_generate_events.py), framed at once
            tail = b'","index":0}],"usageMetadata":%b,%b' % (json_encoder.encode(usage), self._ids)
            return _END_HEAD + reason.encode() + tail
        parts = [wire.Part(text="", thought_signature=self._signature)] if self._signature else []
        candidate = wire.Candidate(
            content=wire.Content(role="model", parts=parts) if parts else None, finish_reason=reason, index=0
        )
        made = self._chunk([candidate])
        made.usage_metadata = usage
        return json_encoder.encode(made)

    def error(self, error: ErrorInfo) -> wire.GenerateContentResponse:
        code, status = encode.error_status(error.code)
        return wire.GenerateContentResponse(
            error=wire.Status(code=code, message=error.message, status=status)
        )

    def _chunk(self, candidates: list[wire.Candidate]) -> wire.GenerateContentResponse:
        return wire.GenerateContentResponse(
            candidates=candidates, model_version=self.model or None, response_id=self.response_id
        )


def _says_nothing(frame: bytes) -> bool:
    """A step's start that no chunk says anything of (most: a model output's, still empty), told from its
    step's type and content alone, not the whole event."""
    step = _starts.decode(frame.partition(b"\ndata: ")[2]).step
    return step.type not in _STARTS_READ or (step.type == "model_output" and not step.content)


async def render(frames: AsyncIterator[bytes], chunks: Chunks, *, sse: bool) -> AsyncIterator[bytes]:
    """A stream of our frames as the chunks' stream: SSE events (`alt=sse`), or one JSON array."""
    opened = False
    try:
        async for read in frames:
            if made := chunks.feed(read):
                if sse:
                    yield b"data: " + b"\r\n\r\ndata: ".join(made) + b"\r\n\r\n"
                else:
                    yield (b",\r\n" if opened else b"[") + b",\r\n".join(made)
                    opened = True
        if not sse:
            yield b"]" if opened else b"[]"
    finally:
        # closed now (a relay stops its run when its client goes: runner/replies.py)
        if (aclose := getattr(frames, "aclose", None)) is not None:
            await aclose()
