"""The Responses API's stream events, field for field as OpenAI sends them (`openai.types.responses.
Response*Event`) and as the Open Responses models require them (`openresponses-types`, `*StreamingEvent`):
every field encoded, `logprobs: []` included, since the SDK's models require it. Which event comes when is
events.py's (the grammar); this module only says what each one holds."""

from __future__ import annotations

from typing import Any

import msgspec

from ...protocol.base import enc_hook
from .wire import OutputItem, OutputText, Response, SummaryText


class StreamEvent(msgspec.Struct, kw_only=True, tag_field="type", gc=False):
    #: the event's place in the response's stream from its start (events.py numbers them)
    sequence_number: int


class Padded(StreamEvent, kw_only=True, omit_defaults=True):
    """A delta event, whose `obfuscation` is left out unless asked for (include_obfuscation)."""


class Created(StreamEvent, tag="response.created", kw_only=True):
    response: Response


class Queued(StreamEvent, tag="response.queued", kw_only=True):
    response: Response


class InProgress(StreamEvent, tag="response.in_progress", kw_only=True):
    response: Response


class Completed(StreamEvent, tag="response.completed", kw_only=True):
    response: Response


class Failed(StreamEvent, tag="response.failed", kw_only=True):
    response: Response


class Incomplete(StreamEvent, tag="response.incomplete", kw_only=True):
    response: Response


class ItemAdded(StreamEvent, tag="response.output_item.added", kw_only=True):
    output_index: int
    item: OutputItem


class ItemDone(StreamEvent, tag="response.output_item.done", kw_only=True):
    output_index: int
    item: OutputItem


class PartAdded(StreamEvent, tag="response.content_part.added", kw_only=True):
    item_id: str
    output_index: int
    content_index: int
    part: OutputText


class PartDone(StreamEvent, tag="response.content_part.done", kw_only=True):
    item_id: str
    output_index: int
    content_index: int
    part: OutputText


class TextDelta(Padded, tag="response.output_text.delta", kw_only=True):
    item_id: str
    output_index: int
    content_index: int
    delta: str
    #: required by the SDK's model (no default, so that omit_defaults keeps it)
    logprobs: list[Any]
    #: padding (include_obfuscation), left out unless asked for
    obfuscation: str | None = None


class TextDone(StreamEvent, tag="response.output_text.done", kw_only=True):
    item_id: str
    output_index: int
    content_index: int
    text: str
    logprobs: list[Any] = []


class ArgumentsDelta(
    StreamEvent, tag="response.function_call_arguments.delta", kw_only=True, omit_defaults=True
):
    item_id: str
    output_index: int
    delta: str
    obfuscation: str | None = None


class ArgumentsDone(StreamEvent, tag="response.function_call_arguments.done", kw_only=True):
    item_id: str
    output_index: int
    arguments: str


class SummaryPartAdded(StreamEvent, tag="response.reasoning_summary_part.added", kw_only=True):
    item_id: str
    output_index: int
    summary_index: int
    part: SummaryText


class SummaryPartDone(StreamEvent, tag="response.reasoning_summary_part.done", kw_only=True):
    item_id: str
    output_index: int
    summary_index: int
    part: SummaryText


class SummaryDelta(
    StreamEvent, tag="response.reasoning_summary_text.delta", kw_only=True, omit_defaults=True
):
    item_id: str
    output_index: int
    summary_index: int
    delta: str
    obfuscation: str | None = None


class SummaryDone(StreamEvent, tag="response.reasoning_summary_text.done", kw_only=True):
    item_id: str
    output_index: int
    summary_index: int
    text: str


class ErrorPayload(msgspec.Struct, kw_only=True, gc=False):
    type: str
    code: str | None
    message: str
    param: str | None


class Error(StreamEvent, tag="error", kw_only=True):
    """OpenAI's `error` event holds `code`, `message` and `param` itself; the Open Responses one holds
    them in `error` (with a `type`): both are sent, so that either reader finds its fields."""

    code: str | None
    message: str
    param: str | None
    error: ErrorPayload


#: the events whose `obfuscation` pads their payload (include_obfuscation)
DELTAS = (TextDelta, ArgumentsDelta, SummaryDelta)


_encoder = msgspec.json.Encoder(enc_hook=enc_hook)
_PREFIXES: dict[type[StreamEvent], bytes] = {}


class Piece(msgspec.Struct, gc=False):
    """The two deltas most frames carry, read without the open unions' hook (a third of the cost)."""

    type: str
    #: a text delta's text as it is in the frame (JSON): it goes into the Responses frame as it is
    text: msgspec.Raw = msgspec.Raw()
    arguments: str | None = None


class PieceFrame(msgspec.Struct, gc=False):
    index: int
    delta: Piece


#: the step.delta frames' decoder
pieces = msgspec.json.Decoder(PieceFrame)


#: a text delta's frame, around its number, its item's fields (`text_fields`) and its text: as `frame` makes
#: it of a TextDelta without obfuscation, at a fifth of the cost (a stream is mostly these)
TEXT_HEAD = (
    b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":'
)
TEXT_TAIL = b',"logprobs":[]}\n\n'


def text_fields(item_id: str, output_index: int, content_index: int) -> bytes:
    return b',"item_id":%s,"output_index":%d,"content_index":%d,"delta":' % (
        msgspec.json.encode(item_id),
        output_index,
        content_index,
    )


def frame(event: StreamEvent) -> bytes:
    """`event: <type>\\ndata: <json>\\n\\n`."""
    prefix = _PREFIXES.get(type(event))
    if prefix is None:
        tag = type(event).__struct_config__.tag
        prefix = _PREFIXES[type(event)] = b"event: " + str(tag).encode() + b"\ndata: "
    return prefix + _encoder.encode(event) + b"\n\n"
