"""Anthropic's Messages API on the wire: the request we send and the stream events we read.

Names are the wire's own (snake_case); content blocks, their sources, stream events and deltas are unions
tagged by `type`. The four block types a reply streams (text, thinking, redacted thinking, tool use) have
one shape both ways and are shared: each of their fields is always sent, and has a default so that a start
event that leaves one out still decodes. Types this module does not list (a server tool's block, a
citation, an event added later) are not decoding errors: the decoder skips them.
"""

from __future__ import annotations

from typing import Any

from ...protocol.base import Wire

#: the backend kind in models.toml, and the name native data is sealed with when no other is given
KIND = "anthropic"
API_VERSION = "2023-06-01"

# ---------------------------------------------------------------------------------------------------------
# Content blocks, both ways


class Block(Wire, tag_field="type", omit_defaults=False):
    """A content block; every field is sent, even an empty one (Anthropic wants `thinking: ""`)."""


class TextBlock(Block, tag="text"):
    text: str = ""


class ThinkingBlock(Block, tag="thinking"):
    thinking: str = ""
    #: opaque; must come back byte for byte, and only to Anthropic
    signature: str = ""


class RedactedThinkingBlock(Block, tag="redacted_thinking"):
    data: str = ""


class ToolUseBlock(Block, tag="tool_use"):
    id: str = ""
    name: str = ""
    #: `{}` in a stream: the input follows as `input_json_delta` fragments
    input: dict[str, Any] = {}


#: what `content_block_start` opens
StreamedBlock = TextBlock | ThinkingBlock | RedactedThinkingBlock | ToolUseBlock

# ---------------------------------------------------------------------------------------------------------
# Request


class Base64Source(Wire, tag_field="type", tag="base64"):
    media_type: str
    data: str


class PlainTextSource(Wire, tag_field="type", tag="text"):
    media_type: str
    data: str


class URLSource(Wire, tag_field="type", tag="url"):
    url: str


Source = Base64Source | PlainTextSource | URLSource


class ImageBlock(Block, tag="image"):
    source: Source


class DocumentBlock(Block, tag="document"):
    source: Source


class ToolResultBlock(Block, tag="tool_result", omit_defaults=True):
    tool_use_id: str
    content: str
    is_error: bool | None = None


RequestBlock = (
    TextBlock
    | ImageBlock
    | DocumentBlock
    | ThinkingBlock
    | RedactedThinkingBlock
    | ToolUseBlock
    | ToolResultBlock
)


class Message(Wire):
    #: "user" or "assistant", alternating
    role: str
    content: list[RequestBlock]


class Thinking(Wire, tag_field="type", tag="enabled"):
    budget_tokens: int


class ToolSpec(Wire):
    name: str
    input_schema: dict[str, Any]
    description: str | None = None


class ToolChoice(Wire):
    #: "auto", "any" or "none"; "tool" with `name`
    type: str
    name: str | None = None


class MessagesRequest(Wire):
    model: str
    messages: list[Message]
    max_tokens: int
    stream: bool
    system: str | None = None
    thinking: Thinking | None = None
    stop_sequences: list[str] | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    tools: list[ToolSpec] | None = None
    tool_choice: ToolChoice | None = None


class CountTokensRequest(Wire):
    """`POST /v1/messages/count_tokens`: what a turn would be given, without what it would be asked to make
    (the endpoint refuses `max_tokens`, `stream` and the sampling fields)."""

    model: str
    messages: list[Message]
    system: str | None = None
    thinking: Thinking | None = None
    tools: list[ToolSpec] | None = None
    tool_choice: ToolChoice | None = None


class CountTokensResponse(Wire):
    input_tokens: int


# ---------------------------------------------------------------------------------------------------------
# Stream events


class TextDelta(Wire, tag_field="type", tag="text_delta"):
    text: str = ""


class ThinkingDelta(Wire, tag_field="type", tag="thinking_delta"):
    thinking: str = ""


class SignatureDelta(Wire, tag_field="type", tag="signature_delta"):
    signature: str = ""


class InputJsonDelta(Wire, tag_field="type", tag="input_json_delta"):
    partial_json: str = ""


BlockDelta = TextDelta | ThinkingDelta | SignatureDelta | InputJsonDelta


class Usage(Wire):
    """Counts so far: `message_delta` repeats or omits those of `message_start`."""

    #: excludes cache reads and writes
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None


class StartedMessage(Wire):
    usage: Usage | None = None


class MessageStart(Wire, tag_field="type", tag="message_start"):
    message: StartedMessage | None = None


class ContentBlockStart(Wire, tag_field="type", tag="content_block_start"):
    content_block: StreamedBlock | None = None


class ContentBlockDelta(Wire, tag_field="type", tag="content_block_delta"):
    delta: BlockDelta | None = None


class ContentBlockStop(Wire, tag_field="type", tag="content_block_stop"):
    """The open block is complete."""


class StopReason(Wire):
    stop_reason: str | None = None


class MessageDelta(Wire, tag_field="type", tag="message_delta"):
    delta: StopReason | None = None
    usage: Usage | None = None


class MessageStop(Wire, tag_field="type", tag="message_stop"):
    """The last event of a complete reply."""


class Ping(Wire, tag_field="type", tag="ping"):
    """A keep-alive, anywhere in the stream."""


class ErrorDetail(Wire):
    #: overloaded_error, rate_limit_error, ...
    type: str | None = None
    message: str | None = None


class ErrorEvent(Wire, tag_field="type", tag="error"):
    """An error after the 200 (the stream then ends)."""

    error: ErrorDetail | str | None = None


StreamEvent = (
    MessageStart
    | ContentBlockStart
    | ContentBlockDelta
    | ContentBlockStop
    | MessageDelta
    | MessageStop
    | Ping
    | ErrorEvent
)


class Probe(Wire):
    """Just enough of an event that did not decode to tell an unknown type from a malformed event."""

    type: str | None = None
    content_block: Probe | None = None
    delta: Probe | None = None
