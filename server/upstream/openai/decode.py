"""`chat.completion.chunk`s -> normalised events.

Reasoning arrives as `delta.reasoning_content` (DeepSeek, vLLM) or `delta.reasoning` (Ollama, OpenRouter)
and becomes thought steps. A tool call arrives in fragments: the first names the call (and has its id), the
rest continue its arguments; calls follow one another by `index`.
"""

from __future__ import annotations

import msgspec

from ...protocol.interaction import ErrorInfo, Usage
from .. import native
from ..base import Finished, UpstreamError, UsageReported
from ..emit import to_json
from ..stream import Events, JsonStreamDecoder
from . import wire
from .wire import KIND

_chunks = msgspec.json.Decoder(wire.ChatCompletionChunk)
_NO_FUNCTION = wire.FunctionDelta()


class OpenAIDecoder(JsonStreamDecoder[wire.ChatCompletionChunk]):
    """The stream ends in `data: [DONE]`; with `include_usage` a last chunk without choices has the usage."""

    def __init__(self, backend: str = KIND) -> None:
        super().__init__(backend, _chunks)
        self._finish: str | None = None
        self._call_index: int | None = None

    def on_chunk(self, chunk: wire.ChatCompletionChunk) -> Events:
        if chunk.error is not None:
            raise stream_error(self.backend, chunk.error)
        events: Events = []
        for choice in chunk.choices or ():
            if choice.index == 0:  # n > 1 is never requested
                events += self._choice(choice)
        if chunk.usage is not None:
            events.append(UsageReported(usage=map_usage(chunk.usage)))
        return events

    def _choice(self, choice: wire.Choice) -> Events:
        events: Events = []
        delta = choice.delta
        if delta is not None:
            reasoning = delta.reasoning_content or delta.reasoning
            if reasoning is not None:
                events += self.steps.thought(summary=reasoning)
            if isinstance(delta.content, str):
                events += self.steps.text(delta.content)
            for call in delta.tool_calls or ():
                events += self._tool_call(call)
        if choice.finish_reason:
            self._finish = choice.finish_reason
        return events

    def _tool_call(self, call: wire.ToolCallDelta) -> Events:
        function = call.function or _NO_FUNCTION
        fragment = function.arguments
        if not isinstance(fragment, str):
            # a few servers send the arguments whole, as an object
            fragment = to_json(fragment) if fragment is not None else ""
        index = call.index
        starts = index != self._call_index if index is not None else bool(call.id)
        if starts:
            # fragments of one call arrive in order, and one call after another (by index)
            self._call_index = index
            call_id = call.id or native.new_call_id()
            return self.steps.function_call(call_id, function.name or "", fragment)
        return self.steps.arguments(fragment)

    def finished(self) -> Finished:
        reason = self._finish
        if reason is None and not self.done:
            raise UpstreamError(self.backend, 0, "the stream ended before the model finished")
        if reason == "length":
            return Finished(status="incomplete")
        if reason == "content_filter":
            message = "The response was blocked by the upstream's content filter"
            return Finished(status="failed", error=ErrorInfo(code="content_blocked", message=message))
        if reason in ("tool_calls", "function_call") or self.steps.calls:
            return Finished(status="requires_action")
        return Finished(status="completed")


def stream_error(backend: str, error: wire.StreamError | str) -> UpstreamError:
    """`data: {"error": {...}}` after a 200: keep the upstream's words and, when it says, its status."""
    if isinstance(error, str):
        return UpstreamError(backend, 500, error)
    code = error.code
    message = error.message or error.type or (str(code) if code is not None else "no message")
    status = code if isinstance(code, int) and 400 <= code < 600 else None
    if status is None:
        kind = error.type or str(code or "")
        status = 429 if "rate_limit" in kind else 400 if "invalid_request" in kind else 500
    return UpstreamError(backend, status, message)


def map_usage(usage: wire.CompletionUsage) -> Usage:
    reasoning = usage.completion_tokens_details.reasoning_tokens if usage.completion_tokens_details else None
    output = usage.completion_tokens
    if output is not None and reasoning is not None:
        output -= reasoning  # OpenAI counts reasoning inside completion tokens; the API reports them apart
    details = usage.prompt_tokens_details
    return Usage(
        total_input_tokens=usage.prompt_tokens,
        total_output_tokens=output,
        total_thought_tokens=reasoning,
        total_cached_tokens=details.cached_tokens if details is not None else None,
        total_tokens=usage.total_tokens,
    )
