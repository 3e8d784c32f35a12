"""Messages stream events -> normalised events.

Named SSE events whose name equals `data.type`: message_start, then per content block a content_block_start /
content_block_delta* / content_block_stop, then message_delta (stop reason, cumulative usage) and
message_stop; `ping` anywhere, and an `error` event can arrive after the 200. Anthropic adds event, block and
delta types over time and asks clients to ignore those they do not know, so these are skipped.
"""

from __future__ import annotations

import typing
from typing import Any

import msgspec

from ...protocol.interaction import ErrorInfo, Usage
from .. import native
from ..base import Finished, UpstreamError, UsageReported
from ..emit import to_json
from ..sse import SSEMessage
from ..stream import Events, JsonStreamDecoder
from . import wire
from .wire import KIND

#: Anthropic's error types -> an HTTP status, so that the runner's retry rules apply to stream errors too
ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
_events = msgspec.json.Decoder(wire.StreamEvent)
_probes = msgspec.json.Decoder(wire.Probe)


def _by_tag(union: Any) -> dict[str, Any]:
    """The members of a tagged union by their tags."""
    return {member.__struct_config__.tag: member for member in typing.get_args(union)}


#: a decoder per event type, for data that lacks `type` and is named only by its SSE event
_EVENT_DECODERS = {tag: msgspec.json.Decoder(member) for tag, member in _by_tag(wire.StreamEvent).items()}
_BLOCK_TAGS = frozenset(_by_tag(wire.StreamedBlock))
_DELTA_TAGS = frozenset(_by_tag(wire.BlockDelta))


class AnthropicDecoder(JsonStreamDecoder[wire.StreamEvent]):
    """The reply is complete once `message_delta` has given its stop reason."""

    unit = "event"

    def __init__(self, backend: str = KIND) -> None:
        super().__init__(backend, _events)
        self._usage = wire.Usage()
        self._stop_reason: str | None = None
        self._block: wire.StreamedBlock | None = None  # the open content block
        self._new_thought = False

    def on_chunk(self, chunk: wire.StreamEvent) -> Events:
        match chunk:  # the most frequent event first
            case wire.ContentBlockDelta():
                return self._block_delta(chunk.delta) if chunk.delta is not None else []
            case wire.ContentBlockStart():
                return self._block_start(chunk.content_block)
            case wire.ContentBlockStop():
                self._block = None
                return self.steps.end()
            case wire.MessageStart():
                return self._usage_of(chunk.message.usage if chunk.message is not None else None)
            case wire.MessageDelta():
                if chunk.delta is not None and chunk.delta.stop_reason:
                    self._stop_reason = chunk.delta.stop_reason
                return self._usage_of(chunk.usage)
            case wire.ErrorEvent():
                raise stream_error(self.backend, chunk.error)
        return []  # message_stop (the stop reason came with message_delta) and ping

    def on_invalid(self, message: SSEMessage, error: msgspec.ValidationError) -> Events:
        """An event, block or delta type we do not know is skipped; a known one that breaks its wire type
        is malformed. Data without `type` is read as the event its SSE name says."""
        try:
            probe = _probes.decode(message.data)
        except msgspec.ValidationError:
            return super().on_invalid(message, error)
        kind = probe.type or message.event
        if kind not in _EVENT_DECODERS or _unknown_member(kind, probe):
            if kind == "content_block_start":
                self._block = None
            return []
        if probe.type is None:
            try:
                return self.on_chunk(_EVENT_DECODERS[kind].decode(message.data))
            except msgspec.ValidationError as invalid:
                error = invalid
        raise self.malformed(message, str(error))

    def _block_start(self, block: wire.StreamedBlock | None) -> Events:
        self._block = block
        steps = self.steps
        if isinstance(block, wire.TextBlock):
            return steps.text(block.text)
        if isinstance(block, wire.ThinkingBlock):
            self._new_thought = True
            return self._thought(block.thinking, block.signature)
        if isinstance(block, wire.RedactedThinkingBlock):
            signature = native.wrap(self.backend, {"redacted": block.data})
            return steps.thought(signature=signature, new=True)
        if isinstance(block, wire.ToolUseBlock):
            initial = to_json(block.input) if block.input else ""
            return steps.function_call(block.id or native.new_call_id(), block.name, initial)
        return []

    def _thought(self, text: str, raw_signature: str) -> Events:
        signature = native.wrap(self.backend, raw_signature) if raw_signature else None
        events = self.steps.thought(summary=text or None, signature=signature, new=self._new_thought)
        if events:
            self._new_thought = False
        return events

    def _block_delta(self, delta: wire.BlockDelta) -> Events:
        if isinstance(delta, wire.TextDelta):
            return self.steps.text(delta.text)
        if isinstance(delta, wire.ThinkingDelta):
            return self._thought(delta.thinking, "")
        if isinstance(delta, wire.SignatureDelta):
            return self._thought("", delta.signature)
        if isinstance(delta, wire.InputJsonDelta) and isinstance(self._block, wire.ToolUseBlock):
            return self.steps.arguments(delta.partial_json)
        return []

    def _usage_of(self, usage: wire.Usage | None) -> Events:
        if usage is None:
            return []
        self._usage = merge_usage(self._usage, usage)
        return [UsageReported(usage=map_usage(self._usage))]

    def finished(self) -> Finished:
        reason = self._stop_reason
        if reason is None:
            raise UpstreamError(self.backend, 0, "the stream ended before the model finished")
        if reason in ("max_tokens", "pause_turn", "model_context_window_exceeded"):
            return Finished(status="incomplete")
        if reason == "refusal":
            message = "Anthropic declined to answer (stop_reason refusal)"
            return Finished(status="failed", error=ErrorInfo(code="content_blocked", message=message))
        if reason == "tool_use" or self.steps.calls:
            return Finished(status="requires_action")
        return Finished(status="completed")


def _unknown_member(kind: str, probe: wire.Probe) -> bool:
    """A known event that holds a block or delta of a type we do not know."""
    if kind == "content_block_start" and probe.content_block is not None:
        return probe.content_block.type not in _BLOCK_TAGS
    if kind == "content_block_delta" and probe.delta is not None:
        return probe.delta.type not in _DELTA_TAGS
    return False


def stream_error(backend: str, error: wire.ErrorDetail | str | None) -> UpstreamError:
    """An `event: error` after the 200, with its type mapped to a status (overloaded_error -> 529)."""
    if not isinstance(error, wire.ErrorDetail):
        return UpstreamError(backend, 500, str(error))
    kind = error.type or "api_error"
    message = f"{kind}: {error.message or 'no message'}"
    return UpstreamError(backend, ERROR_STATUS.get(kind, 500), message)


def merge_usage(so_far: wire.Usage, update: wire.Usage) -> wire.Usage:
    """`message_delta`'s counts are cumulative and may repeat or omit `message_start`'s."""
    return wire.Usage(
        input_tokens=_latest(update.input_tokens, so_far.input_tokens),
        output_tokens=_latest(update.output_tokens, so_far.output_tokens),
        cache_read_input_tokens=_latest(update.cache_read_input_tokens, so_far.cache_read_input_tokens),
        cache_creation_input_tokens=_latest(
            update.cache_creation_input_tokens, so_far.cache_creation_input_tokens
        ),
    )


def _latest(new: int | None, old: int | None) -> int | None:
    return new if new is not None else old


def map_usage(usage: wire.Usage) -> Usage:
    """Anthropic's input_tokens exclude cache reads and writes; the API's input total includes both."""
    uncached = usage.input_tokens or 0
    read = usage.cache_read_input_tokens or 0
    written = usage.cache_creation_input_tokens or 0
    output = usage.output_tokens or 0
    total_input = uncached + read + written
    return Usage(
        total_input_tokens=total_input,
        total_output_tokens=output,
        total_cached_tokens=read,
        total_tokens=total_input + output,
    )
