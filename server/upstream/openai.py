"""Any OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp, LM Studio): `/v1/chat/completions`.

Chunks are `data: {chat.completion.chunk}` events ending in `data: [DONE]`; with `include_usage` a last
chunk with `choices: []` carries the usage. Reasoning arrives as `delta.reasoning_content` (DeepSeek, vLLM)
or `delta.reasoning` (Ollama, OpenRouter) and becomes thought steps; chat completions have no signature to
send back, so thoughts are never replayed here.
"""

from __future__ import annotations

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
from ..protocol.steps import FunctionCallStep, FunctionResultStep, ModelOutputStep, Step, UserInputStep
from ..protocol.tools import FunctionTool
from . import native
from .base import Finished, UpstreamError, UpstreamEvent, UpstreamRequest, UsageReported
from .emit import (
    NO_RESULT,
    OpenCalls,
    StepSequencer,
    data_url,
    json_output,
    result_text,
    to_json,
    tool_choice,
    unsupported_content,
    unsupported_tool,
)
from .sse import SSEDecoder, SSEMessage
from .transport import HTTPBackend, api_key, join_url

KIND = "openai"
_AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}
_EFFORT = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}
_CHOICE = {"auto": "auto", "any": "required", "none": "none", "validated": "auto"}

# ---------------------------------------------------------------------------------------------------------
# Request


def check_content(item: Content, backend: str = KIND) -> None:
    if isinstance(item, VideoContent):
        raise unsupported_content(backend, item)
    if isinstance(item, AudioContent) and (item.data is None or _audio_format(item) is None):
        raise unsupported_content(backend, item, "only inline wav or mp3 data")
    if isinstance(item, DocumentContent) and item.data is None:
        raise unsupported_content(backend, item, "only inline data, not a URI")


def _audio_format(item: AudioContent) -> str | None:
    return _AUDIO_FORMATS.get(item.mime_type or "audio/wav")


def content_part(item: Content) -> dict[str, Any] | None:
    if isinstance(item, TextContent):
        return {"type": "text", "text": item.text}
    if isinstance(item, ImageContent):
        url = data_url(item.mime_type or "image/png", item.data) if item.data is not None else item.uri
        return {"type": "image_url", "image_url": {"url": url}} if url else None
    if isinstance(item, AudioContent) and item.data is not None:
        return {
            "type": "input_audio",
            "input_audio": {"data": item.data, "format": _audio_format(item) or "wav"},
        }
    if isinstance(item, DocumentContent) and item.data is not None:
        mime = item.mime_type or "application/pdf"
        name = "document." + mime.rsplit("/", 1)[-1]
        return {"type": "file", "file": {"filename": name, "file_data": data_url(mime, item.data)}}
    return None


class _Messages:
    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def user(self, parts: list[dict[str, Any]]) -> None:
        last = self.items[-1] if self.items else None
        if last is not None and last["role"] == "user":
            last["content"].extend(parts)  # two user inputs in a row become one message
        else:
            self.items.append({"role": "user", "content": list(parts)})

    def assistant(self) -> dict[str, Any]:
        last = self.items[-1] if self.items else None
        if last is not None and last["role"] == "assistant":
            return last
        message: dict[str, Any] = {"role": "assistant", "content": None}
        self.items.append(message)
        return message

    def tool(self, call_id: str, content: str) -> None:
        self.items.append({"role": "tool", "tool_call_id": native.safe_call_id(call_id), "content": content})

    def finish(self) -> list[dict[str, Any]]:
        for message in self.items:
            content = message.get("content")
            # plain strings where possible: many local servers take nothing else
            if isinstance(content, list) and all(p.get("type") == "text" for p in content):
                message["content"] = "\n".join(p["text"] for p in content)
        return self.items


def build_messages(history: list[Step], system: str | None = None) -> list[dict[str, Any]]:
    out = _Messages()
    if system:
        out.items.append({"role": "system", "content": system})
    calls = native.CallIndex(history)
    open_calls = OpenCalls()
    for step in history:
        for missing in open_calls.unanswered_before(step):
            out.tool(missing.id, NO_RESULT)
        if isinstance(step, UserInputStep):
            contents = step.content if isinstance(step.content, list) else []
            parts = [p for p in (content_part(c) for c in contents) if p is not None]
            if parts:
                out.user(parts)
        elif isinstance(step, ModelOutputStep):
            text = text_of(step.content)
            if text:
                message = out.assistant()
                message["content"] = (message["content"] or "") + text
        elif isinstance(step, FunctionCallStep):
            call = {
                "id": native.safe_call_id(step.id),
                "type": "function",
                "function": {"name": step.name, "arguments": to_json(step.arguments)},
            }
            out.assistant().setdefault("tool_calls", []).append(call)
            open_calls.called(step)
        elif isinstance(step, FunctionResultStep):
            if open_calls.answered(step):
                out.tool(step.call_id, result_text(step.result))
            else:
                # a result whose call is not in the history: still worth telling the model, as text
                text = f"Result of function {calls.name_of(step)}: {result_text(step.result)}"
                out.user([{"type": "text", "text": text}])
        # thoughts (no replayable reasoning in chat completions), built-in tool and unknown steps: skipped
    for missing in open_calls.unanswered_before(None):
        out.tool(missing.id, NO_RESULT)
    return out.finish()


def build_body(request: UpstreamRequest, base_url: str = "") -> dict[str, Any]:
    config = request.config
    is_openai = "api.openai.com" in base_url
    body: dict[str, Any] = {
        "model": request.upstream_model,
        "messages": build_messages(request.history, config.system_instruction),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    gen = config.generation_config
    if gen is not None:
        for name, key in (("temperature", "temperature"), ("top_p", "top_p"), ("seed", "seed")):
            if getattr(gen, name) is not None:
                body[key] = getattr(gen, name)
        if gen.stop_sequences:
            body["stop"] = gen.stop_sequences
        if gen.max_output_tokens is not None:
            # OpenAI itself wants the newer name (reasoning models reject max_tokens); local servers the older
            body["max_completion_tokens" if is_openai else "max_tokens"] = gen.max_output_tokens
        if gen.top_k is not None and not is_openai:
            body["top_k"] = gen.top_k  # vLLM, llama.cpp and Ollama take it; OpenAI rejects unknown fields
        if gen.thinking_level in _EFFORT:
            body["reasoning_effort"] = _EFFORT[gen.thinking_level]
    tools = [
        {"type": "function", "function": _function(tool)}
        for tool in config.tools or []
        if isinstance(tool, FunctionTool)
    ]
    if tools:
        body["tools"] = tools
        mode, names = tool_choice(config)
        if names and len(names) == 1 and mode in ("any", "validated"):
            body["tool_choice"] = {"type": "function", "function": {"name": names[0]}}
        elif mode in _CHOICE:
            body["tool_choice"] = _CHOICE[mode]
    wants_json, schema = json_output(config)
    if schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "response", "schema": schema},
        }
    elif wants_json:
        body["response_format"] = {"type": "json_object"}
    return body


def _function(tool: FunctionTool) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name}
    if tool.description:
        function["description"] = tool.description
    function["parameters"] = tool.parameters or {"type": "object", "properties": {}}
    return function


# ---------------------------------------------------------------------------------------------------------
# Response stream


class OpenAIDecoder:
    """chat.completion.chunk objects -> normalised events."""

    def __init__(self, backend: str = KIND) -> None:
        self.backend = backend
        self.steps = StepSequencer()
        self._sse = SSEDecoder()
        self._done = False
        self._finish: str | None = None
        self._call_index: int | None = None

    def feed_bytes(self, chunk: bytes) -> list[UpstreamEvent]:
        return self._messages(self._sse.feed(chunk))

    def _messages(self, messages: list[SSEMessage]) -> list[UpstreamEvent]:
        events: list[UpstreamEvent] = []
        for message in messages:
            if message.data.strip() == "[DONE]":
                self._done = True
                continue
            try:
                chunk = msgspec.json.decode(message.data)
            except msgspec.DecodeError:
                detail = f"malformed stream chunk: {message.data[:200]!r}"
                raise UpstreamError(self.backend, 0, detail) from None
            if isinstance(chunk, dict):
                events += self.feed(chunk)
        return events

    def feed(self, chunk: dict[str, Any]) -> list[UpstreamEvent]:
        if chunk.get("error") is not None:
            raise stream_error(self.backend, chunk["error"])
        events: list[UpstreamEvent] = []
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue  # n > 1 is never requested
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str):
                events += self.steps.thought(summary=reasoning)
            content = delta.get("content")
            if isinstance(content, str):
                events += self.steps.text(content)
            for call in delta.get("tool_calls") or []:
                if isinstance(call, dict):
                    events += self._tool_call(call)
            if choice.get("finish_reason"):
                self._finish = str(choice["finish_reason"])
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            events.append(UsageReported(usage=map_usage(usage)))
        return events

    def _tool_call(self, call: dict[str, Any]) -> list[UpstreamEvent]:
        index = call.get("index")
        function = call.get("function") or {}
        fragment = function.get("arguments")
        if not isinstance(fragment, str):
            # a few servers send the arguments whole, as an object
            fragment = to_json(fragment) if fragment is not None else ""
        starts = index != self._call_index if index is not None else bool(call.get("id"))
        if starts:
            # fragments of one call arrive in order, and one call after another (by index)
            self._call_index = index
            call_id = call.get("id") or native.new_call_id()
            return self.steps.function_call(str(call_id), str(function.get("name") or ""), fragment)
        return self.steps.arguments(fragment)

    def close(self) -> list[UpstreamEvent]:
        events = self._messages(self._sse.close())
        events += self.steps.end()
        events.append(self.finished())
        return events

    def finished(self) -> Finished:
        reason = self._finish
        if reason is None and not self._done:
            raise UpstreamError(self.backend, 0, "the stream ended before the model finished")
        if reason == "length":
            return Finished(status="incomplete")
        if reason == "content_filter":
            message = "The response was blocked by the upstream's content filter"
            return Finished(status="failed", error=ErrorInfo(code="content_blocked", message=message))
        if reason in ("tool_calls", "function_call") or self.steps.calls:
            return Finished(status="requires_action")
        return Finished(status="completed")


def stream_error(backend: str, error: Any) -> UpstreamError:
    """`data: {"error": {...}}` after a 200: keep the upstream's words and, when it says, its status."""
    if not isinstance(error, dict):
        return UpstreamError(backend, 500, str(error))
    message = str(error.get("message") or error.get("type") or error)
    code = error.get("code")
    status = code if isinstance(code, int) and 400 <= code < 600 else None
    if status is None:
        kind = str(error.get("type") or code or "")
        status = 429 if "rate_limit" in kind else 400 if "invalid_request" in kind else 500
    return UpstreamError(backend, status, message)


def map_usage(usage: dict[str, Any]) -> Usage:
    prompt_details = usage.get("prompt_tokens_details") or {}
    completion_details = usage.get("completion_tokens_details") or {}
    reasoning = completion_details.get("reasoning_tokens")
    output = usage.get("completion_tokens")
    if isinstance(output, int) and isinstance(reasoning, int):
        output -= reasoning  # OpenAI counts reasoning inside completion tokens; the API reports them apart
    return Usage(
        total_input_tokens=usage.get("prompt_tokens"),
        total_output_tokens=output,
        total_thought_tokens=reasoning,
        total_cached_tokens=prompt_details.get("cached_tokens"),
        total_tokens=usage.get("total_tokens"),
    )


# ---------------------------------------------------------------------------------------------------------
# Backend


class OpenAIBackend(HTTPBackend):
    kind = KIND
    default_base_url = "https://api.openai.com/v1"

    def check(self, request: UpstreamRequest) -> None:
        for index, tool in enumerate(request.config.tools or []):
            if not isinstance(tool, FunctionTool):
                raise unsupported_tool(self.name, tool, index)
        for step in request.history:
            if isinstance(step, UserInputStep) and isinstance(step.content, list):
                for item in step.content:
                    check_content(item, self.name)

    def url(self) -> str:
        return join_url(self.base_url, "/v1/chat/completions")

    def headers(self) -> dict[str, str]:
        key = api_key(self.route)
        return {"authorization": f"Bearer {key}"} if key else {}

    def stream(self, request: UpstreamRequest) -> AsyncGenerator[UpstreamEvent, None]:
        body = build_body(request, self.base_url)
        body["model"] = self.upstream_model(request)
        return self._run(self.url(), self.headers(), body, OpenAIDecoder(self.name))
