"""Anthropic's Messages API: `/v1/messages` with `"stream": true`.

Named SSE events whose name equals `data.type`: message_start, then per content block a
content_block_start / content_block_delta* / content_block_stop, then message_delta (stop reason, cumulative
usage) and message_stop; `ping` anywhere, and an `error` event can arrive after the 200. Thinking blocks end
with a signature and must come back byte for byte (only to Anthropic); redacted thinking is opaque and is
kept whole inside the wrapped signature of a thought step with no summary.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncGenerator
from typing import Any

import msgspec

from ..protocol.content import (
    AudioContent,
    Content,
    DocumentContent,
    ImageContent,
    TextContent,
    VideoContent,
    text_of,
)
from ..protocol.interaction import ErrorInfo, Usage
from ..protocol.steps import (
    FunctionCallStep,
    FunctionResultStep,
    ModelOutputStep,
    Step,
    ThoughtStep,
    UserInputStep,
)
from ..protocol.tools import FunctionTool
from . import native
from .base import Finished, UpstreamError, UpstreamEvent, UpstreamRequest, UsageReported
from .emit import (
    NO_RESULT,
    THINKING_BUDGETS,
    OpenCalls,
    StepSequencer,
    json_output,
    result_text,
    to_json,
    tool_choice,
    unsupported_content,
    unsupported_tool,
)
from .sse import SSEDecoder, SSEMessage
from .transport import HTTPBackend, api_key, join_url

KIND = "anthropic"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
MIN_THINKING_BUDGET = 1024
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
_DOCUMENT_TYPES = ("application/pdf", "text/plain")

# ---------------------------------------------------------------------------------------------------------
# Request


def check_content(item: Content, backend: str = KIND) -> None:
    if isinstance(item, AudioContent | VideoContent):
        raise unsupported_content(backend, item)
    if isinstance(item, DocumentContent) and (item.mime_type or "application/pdf") not in _DOCUMENT_TYPES:
        raise unsupported_content(backend, item, "only PDF and plain text documents")


def content_block(item: Content) -> dict[str, Any] | None:
    if isinstance(item, TextContent):
        return {"type": "text", "text": item.text} if item.text else None
    if isinstance(item, ImageContent | DocumentContent):
        kind = "image" if isinstance(item, ImageContent) else "document"
        default_mime = "image/png" if kind == "image" else "application/pdf"
        mime = item.mime_type or default_mime
        if item.data is not None:
            if mime == "text/plain":
                source = {"type": "text", "media_type": mime, "data": _decode_text(item.data)}
            else:
                source = {"type": "base64", "media_type": mime, "data": item.data}
        elif item.uri is not None:
            source = {"type": "url", "url": item.uri}
        else:
            return None
        return {"type": kind, "source": source}
    return None


def _decode_text(data: str) -> str:
    try:
        return base64.b64decode(data).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return data


class _Messages:
    """Blocks appended by role; Anthropic requires user and assistant turns to alternate."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def add(self, role: str, block: dict[str, Any]) -> None:
        if self.items and self.items[-1]["role"] == role:
            self.items[-1]["content"].append(block)
        else:
            self.items.append({"role": role, "content": [block]})


def build_messages(history: list[Step], backend: str = KIND) -> list[dict[str, Any]]:
    out = _Messages()
    calls = native.CallIndex(history)
    open_calls = OpenCalls()

    def answer_missing(before: Step | None) -> None:
        for call in open_calls.unanswered_before(before):
            block = {"type": "tool_result", "tool_use_id": native.safe_call_id(call.id), "content": NO_RESULT}
            out.add("user", {**block, "is_error": True})

    for step in history:
        answer_missing(step)
        if isinstance(step, UserInputStep):
            for item in step.content if isinstance(step.content, list) else []:
                block = content_block(item)
                if block is not None:
                    out.add("user", block)
        elif isinstance(step, ModelOutputStep):
            text = text_of(step.content)
            if text:
                out.add("assistant", {"type": "text", "text": text})
        elif isinstance(step, ThoughtStep):
            value = native.native_for(step.signature, backend)
            if isinstance(value, str):
                thinking = text_of(step.summary or step.content)
                out.add("assistant", {"type": "thinking", "thinking": thinking, "signature": value})
            elif isinstance(value, dict) and isinstance(value.get("redacted"), str):
                out.add("assistant", {"type": "redacted_thinking", "data": value["redacted"]})
            # a thought from another backend, or without a signature, is not sent
        elif isinstance(step, FunctionCallStep):
            block = {"type": "tool_use", "id": native.safe_call_id(step.id), "name": step.name}
            out.add("assistant", {**block, "input": step.arguments})
            open_calls.called(step)
        elif isinstance(step, FunctionResultStep):
            if open_calls.answered(step):
                block = {"type": "tool_result", "tool_use_id": native.safe_call_id(step.call_id)}
                block["content"] = result_text(step.result)
                if step.is_error:
                    block["is_error"] = True
                out.add("user", block)
            else:
                text = f"Result of function {calls.name_of(step)}: {result_text(step.result)}"
                out.add("user", {"type": "text", "text": text})
    answer_missing(None)
    return out.items


def build_body(request: UpstreamRequest, backend: str = KIND) -> dict[str, Any]:
    config = request.config
    gen = config.generation_config
    messages = build_messages(request.history, backend)
    max_tokens = gen.max_output_tokens if gen and gen.max_output_tokens else DEFAULT_MAX_TOKENS
    body: dict[str, Any] = {"model": request.upstream_model, "messages": messages, "stream": True}
    system = config.system_instruction or ""
    wants_json, schema = json_output(config)
    if wants_json:
        # no JSON mode in the Messages API: ask for it in the system prompt
        rule = "Respond with a single JSON value only, no prose and no code fences."
        if schema is not None:
            rule += f" It must match this JSON schema: {to_json(schema)}"
        system = f"{system}\n\n{rule}" if system else rule
    if system:
        body["system"] = system
    thinking = _thinking_budget(request, messages, max_tokens)
    if thinking is not None:
        budget, max_tokens = thinking
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    body["max_tokens"] = max_tokens
    if gen is not None:
        if gen.stop_sequences:
            body["stop_sequences"] = gen.stop_sequences
        if thinking is None:  # with thinking on, Anthropic rejects sampling parameters
            for name in ("temperature", "top_p", "top_k"):
                if getattr(gen, name) is not None:
                    body[name] = getattr(gen, name)
    tools = [_tool(tool) for tool in config.tools or [] if isinstance(tool, FunctionTool)]
    if tools:
        body["tools"] = tools
        mode, names = tool_choice(config)
        if names and len(names) == 1 and mode in ("any", "validated"):
            body["tool_choice"] = {"type": "tool", "name": names[0]}
        elif mode in ("auto", "any", "none"):
            body["tool_choice"] = {"type": mode}
    return body


def _thinking_budget(
    request: UpstreamRequest, messages: list[dict[str, Any]], max_tokens: int
) -> tuple[int, int] | None:
    """(budget_tokens, max_tokens) when extended thinking is asked for and possible, else None."""
    gen = request.config.generation_config
    level = gen.thinking_level if gen else None
    if not level or level == "minimal":
        return None
    # continuing a tool call that was made without thinking (e.g. by another backend) with thinking on is
    # rejected: the last assistant turn must then start with a thinking block
    last = next((m for m in reversed(messages) if m["role"] == "assistant"), None)
    if last is not None and any(b["type"] == "tool_use" for b in last["content"]):
        if last["content"][0]["type"] not in ("thinking", "redacted_thinking"):
            return None
    budget = THINKING_BUDGETS.get(level, 4096)
    if budget >= max_tokens:
        if gen is not None and gen.max_output_tokens:
            budget = max_tokens - 1  # the client's cap wins over the level
        else:
            max_tokens = budget + DEFAULT_MAX_TOKENS
    if budget < MIN_THINKING_BUDGET:
        return None
    return budget, max_tokens


def _tool(tool: FunctionTool) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": tool.name}
    if tool.description:
        spec["description"] = tool.description
    spec["input_schema"] = tool.parameters or {"type": "object", "properties": {}}
    return spec


# ---------------------------------------------------------------------------------------------------------
# Response stream


class AnthropicDecoder:
    """Messages stream events -> normalised events."""

    def __init__(self, backend: str = KIND) -> None:
        self.backend = backend
        self.steps = StepSequencer()
        self._sse = SSEDecoder()
        self._usage: dict[str, Any] = {}
        self._stop_reason: str | None = None
        self._stopped = False
        self._block: str | None = None  # type of the open content block
        self._new_thought = False

    def feed_bytes(self, chunk: bytes) -> list[UpstreamEvent]:
        return self._messages(self._sse.feed(chunk))

    def _messages(self, messages: list[SSEMessage]) -> list[UpstreamEvent]:
        events: list[UpstreamEvent] = []
        for message in messages:
            try:
                data = msgspec.json.decode(message.data)
            except msgspec.DecodeError:
                detail = f"malformed stream event: {message.data[:200]!r}"
                raise UpstreamError(self.backend, 0, detail) from None
            if isinstance(data, dict):
                events += self.feed(message.event, data)
        return events

    def feed(self, event: str, data: dict[str, Any]) -> list[UpstreamEvent]:
        kind = data.get("type") or event
        if kind == "error":
            raise stream_error(self.backend, data.get("error"))
        if kind == "message_start":
            return self._usage_of((data.get("message") or {}).get("usage"))
        if kind == "content_block_start":
            return self._block_start(data.get("content_block") or {})
        if kind == "content_block_delta":
            return self._block_delta(data.get("delta") or {})
        if kind == "content_block_stop":
            self._block = None
            return self.steps.end()
        if kind == "message_delta":
            reason = (data.get("delta") or {}).get("stop_reason")
            if reason:
                self._stop_reason = str(reason)
            return self._usage_of(data.get("usage"))
        if kind == "message_stop":
            self._stopped = True
        return []  # ping and event types added later

    def _block_start(self, block: dict[str, Any]) -> list[UpstreamEvent]:
        self._block = block.get("type")
        steps = self.steps
        if self._block == "text":
            return steps.text(block.get("text") or "")
        if self._block == "thinking":
            self._new_thought = True
            return self._thought(block.get("thinking"), block.get("signature"))
        if self._block == "redacted_thinking":
            signature = native.wrap(self.backend, {"redacted": block.get("data", "")})
            return steps.thought(signature=signature, new=True)
        if self._block == "tool_use":
            args = block.get("input")
            initial = to_json(args) if isinstance(args, dict) and args else ""
            return steps.function_call(
                str(block.get("id") or native.new_call_id()), str(block["name"]), initial
            )
        return []  # server tool blocks: not something this server runs

    def _thought(self, text: Any, raw_signature: Any) -> list[UpstreamEvent]:
        summary = text if isinstance(text, str) and text else None
        signature = (
            native.wrap(self.backend, raw_signature)
            if isinstance(raw_signature, str) and raw_signature
            else None
        )
        events = self.steps.thought(summary=summary, signature=signature, new=self._new_thought)
        if events:
            self._new_thought = False
        return events

    def _block_delta(self, delta: dict[str, Any]) -> list[UpstreamEvent]:
        kind = delta.get("type")
        if kind == "text_delta":
            return self.steps.text(delta.get("text") or "")
        if kind == "thinking_delta":
            return self._thought(delta.get("thinking"), None)
        if kind == "signature_delta":
            return self._thought(None, delta.get("signature"))
        if kind == "input_json_delta" and self._block == "tool_use":
            return self.steps.arguments(delta.get("partial_json") or "")
        return []

    def _usage_of(self, usage: Any) -> list[UpstreamEvent]:
        if not isinstance(usage, dict):
            return []
        # message_delta's counts are cumulative and may repeat or omit message_start's
        self._usage.update({k: v for k, v in usage.items() if isinstance(v, int)})
        return [UsageReported(usage=map_usage(self._usage))]

    def close(self) -> list[UpstreamEvent]:
        events = self._messages(self._sse.close())
        events += self.steps.end()
        events.append(self.finished())
        return events

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


def stream_error(backend: str, error: Any) -> UpstreamError:
    """An `event: error` after the 200, with its type mapped to a status (overloaded_error -> 529)."""
    if not isinstance(error, dict):
        return UpstreamError(backend, 500, str(error))
    kind = str(error.get("type") or "api_error")
    message = f"{kind}: {error.get('message') or 'no message'}"
    return UpstreamError(backend, ERROR_STATUS.get(kind, 500), message)


def map_usage(usage: dict[str, Any]) -> Usage:
    """Anthropic's input_tokens exclude cache reads and writes; the API's input total includes both."""
    uncached = usage.get("input_tokens") or 0
    read = usage.get("cache_read_input_tokens") or 0
    written = usage.get("cache_creation_input_tokens") or 0
    output = usage.get("output_tokens") or 0
    total_input = uncached + read + written
    return Usage(
        total_input_tokens=total_input,
        total_output_tokens=output,
        total_cached_tokens=read,
        total_tokens=total_input + output,
    )


# ---------------------------------------------------------------------------------------------------------
# Backend


class AnthropicBackend(HTTPBackend):
    kind = KIND
    default_base_url = "https://api.anthropic.com"

    def check(self, request: UpstreamRequest) -> None:
        for index, tool in enumerate(request.config.tools or []):
            if not isinstance(tool, FunctionTool):
                raise unsupported_tool(self.name, tool, index)
        for step in request.history:
            if isinstance(step, UserInputStep) and isinstance(step.content, list):
                for item in step.content:
                    check_content(item, self.name)

    def url(self) -> str:
        return join_url(self.base_url, "/v1/messages")

    def headers(self) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION}
        key = api_key(self.route)
        if key:
            headers["x-api-key"] = key
        return headers

    def stream(self, request: UpstreamRequest) -> AsyncGenerator[UpstreamEvent, None]:
        body = build_body(request, self.name)
        body["model"] = self.upstream_model(request)
        return self._run(self.url(), self.headers(), body, AnthropicDecoder(self.name))
