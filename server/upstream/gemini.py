"""Google's Gemini API: `models/{m}:streamGenerateContent?alt=sse`.

Each SSE event is one `GenerateContentResponse`; there is no `[DONE]`, the stream ends when the body does.
Thought signatures ride on parts: on a thought part, on the first function call of a step, or on a (possibly
empty) trailing text part. A signature on a thought part stays in that thought step; one on any other part
becomes a signature-only thought step placed right before that part's step (after it, for text), and is
attached again to the next part when the history is replayed, which is where Gemini validates it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any
from urllib.parse import quote

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
from ..protocol.deltas import ImageDelta
from ..protocol.interaction import ErrorInfo, ModalityTokens, Usage
from ..protocol.steps import (
    CodeExecutionCallStep,
    CodeExecutionResultStep,
    FunctionCallStep,
    FunctionResultStep,
    ModelOutputStep,
    Step,
    ThoughtStep,
    UserInputStep,
)
from ..protocol.tools import (
    CodeExecutionTool,
    ComputerUseTool,
    FileSearchTool,
    FunctionTool,
    GoogleMapsTool,
    GoogleSearchTool,
    UrlContextTool,
)
from . import native
from .base import (
    Finished,
    UpstreamError,
    UpstreamEvent,
    UpstreamRequest,
    UsageReported,
)
from .emit import (
    NO_RESULT,
    THINKING_BUDGETS,
    OpenCalls,
    StepSequencer,
    json_output,
    result_text,
    to_json,
    tool_choice,
    unsupported_tool,
)
from .sse import SSEDecoder
from .transport import HTTPBackend, api_key, join_url

KIND = "gemini"
_BLOCKED = {
    "SAFETY": "the response was blocked by Gemini's safety filters",
    "IMAGE_SAFETY": "the generated image was blocked by Gemini's safety filters",
    "RECITATION": "the response was blocked because it recites training data",
    "IMAGE_RECITATION": "the generated image was blocked because it recites training data",
    "BLOCKLIST": "the response contains terms from the blocklist",
    "PROHIBITED_CONTENT": "the response was blocked for prohibited content",
    "IMAGE_PROHIBITED_CONTENT": "the generated image was blocked for prohibited content",
    "SPII": "the response was blocked because it may contain sensitive personal information",
    "LANGUAGE": "the response is in an unsupported language",
}
_DEFAULT_MIME = {ImageContent: "image/png", AudioContent: "audio/wav", VideoContent: "video/mp4"}
_VIDEO_METADATA = (("fps", "fps"), ("start_offset", "startOffset"), ("end_offset", "endOffset"))
_SUPPORTED_TOOLS = (
    FunctionTool,
    GoogleSearchTool,
    CodeExecutionTool,
    UrlContextTool,
    GoogleMapsTool,
    FileSearchTool,
    ComputerUseTool,
)

# ---------------------------------------------------------------------------------------------------------
# Request


def build_body(request: UpstreamRequest, backend: str = KIND) -> dict[str, Any]:
    config = request.config
    body: dict[str, Any] = {"contents": build_contents(request.history, backend)}
    if config.system_instruction:
        body["systemInstruction"] = {"parts": [{"text": config.system_instruction}]}
    generation = _generation_config(request)
    if generation:
        body["generationConfig"] = generation
    tools, tool_config = _tools(request)
    if tools:
        body["tools"] = tools
    if tool_config:
        body["toolConfig"] = tool_config
    if config.safety_settings:
        body["safetySettings"] = [_safety(s) for s in config.safety_settings]
    if config.cached_content:
        body["cachedContent"] = config.cached_content
    return body


class _Contents:
    """Appends parts to role turns, merging consecutive turns of one role."""

    def __init__(self) -> None:
        self.turns: list[dict[str, Any]] = []
        self.pending_signatures: list[str] = []

    def add(self, role: str, part: dict[str, Any], *, takes_signature: bool = True) -> None:
        if role == "model" and takes_signature and self.pending_signatures:
            part = {**part, "thoughtSignature": self.pending_signatures.pop()}
        if role != "model":
            self.flush_signatures()
        self._append(role, part)

    def _append(self, role: str, part: dict[str, Any]) -> None:
        if self.turns and self.turns[-1]["role"] == role:
            self.turns[-1]["parts"].append(part)
        else:
            self.turns.append({"role": role, "parts": [part]})

    def flush_signatures(self) -> None:
        """A signature with no part after it in its turn rides on an empty text part, as Gemini sent it."""
        for signature in self.pending_signatures:
            self._append("model", {"text": "", "thoughtSignature": signature})
        self.pending_signatures = []


class _Responses:
    """Function results as Gemini takes them: it pairs responses with the calls of the model turn right
    before by position, so that turn gets exactly one response per call, in the calls' order."""

    def __init__(self, history: list[Step]) -> None:
        self.calls = native.CallIndex(history)
        self.open = OpenCalls()
        self.results: list[FunctionResultStep] = []
        # results with no open call: Gemini refuses a response without its call, the model reads text
        self.strays: list[FunctionResultStep] = []

    def take(self, result: FunctionResultStep) -> None:
        (self.results if self.open.answered(result) else self.strays).append(result)

    def flush(self, out: _Contents, before: Step | None) -> None:
        """Before `before` (None: the end), with a stand-in for each call its turn left unanswered."""
        self.results.extend(_stand_in(call) for call in self.open.unanswered_before(before))
        if isinstance(before, FunctionResultStep):
            return
        for result in self.calls.sort_results(self.results):
            response = {"name": self.calls.name_of(result), "response": _response(result)}
            out.add("user", {"functionResponse": response})
        for result in self.strays:
            text = f"Result of function {self.calls.name_of(result)}: {result_text(result.result)}"
            out.add("user", {"text": text})
        self.results.clear()
        self.strays.clear()


def build_contents(history: list[Step], backend: str = KIND) -> list[dict[str, Any]]:
    out = _Contents()
    responses = _Responses(history)
    for step in history:
        responses.flush(out, step)
        if isinstance(step, UserInputStep):
            for item in step.content if isinstance(step.content, list) else []:
                part = content_part(item)
                if part is not None:
                    out.add("user", part)
        elif isinstance(step, ModelOutputStep):
            for item in step.content:
                part = content_part(item)
                if part is not None:
                    out.add("model", part)
        elif isinstance(step, ThoughtStep):
            _add_thought(out, step, backend)
        elif isinstance(step, FunctionCallStep):
            # ids are ours (Gemini sends none); Gemini pairs responses with calls by name and order
            out.add("model", {"functionCall": {"name": step.name, "args": step.arguments}})
            responses.open.called(step)
        elif isinstance(step, FunctionResultStep):
            responses.take(step)
        elif isinstance(step, CodeExecutionCallStep):
            code = {
                "language": str(step.arguments.get("language") or "python").upper(),
                "code": step.arguments.get("code", ""),
            }
            out.add("model", _signed({"executableCode": code}, step.signature, backend))
        elif isinstance(step, CodeExecutionResultStep):
            out.add("model", _signed(_code_result(step), step.signature, backend))
        # other built-in tool steps and unknown steps carry nothing Gemini can take back
    responses.flush(out, None)
    out.flush_signatures()
    return out.turns


def _add_thought(out: _Contents, step: ThoughtStep, backend: str) -> None:
    signature = native.native_for(step.signature, backend)
    if not isinstance(signature, str):
        return  # no signature, or another backend's: Gemini gets nothing from it
    summary = text_of(step.summary or step.content)
    if summary:
        part = {"text": summary, "thought": True, "thoughtSignature": signature}
        out.add("model", part, takes_signature=False)
    else:
        out.pending_signatures.append(signature)


def _code_result(step: CodeExecutionResultStep) -> dict[str, Any]:
    outcome = "OUTCOME_FAILED" if step.is_error else "OUTCOME_OK"
    result = step.result
    output = result if isinstance(result, str) else text_of(result) if isinstance(result, list) else ""
    return {"codeExecutionResult": {"outcome": outcome, "output": output}}


def _stand_in(call: FunctionCallStep) -> FunctionResultStep:
    return FunctionResultStep(call_id=call.id, name=call.name, result=NO_RESULT, is_error=True)


def _signed(part: dict[str, Any], signature: str | None, backend: str) -> dict[str, Any]:
    value = native.native_for(signature, backend)
    return {**part, "thoughtSignature": value} if isinstance(value, str) else part


def content_part(item: Content) -> dict[str, Any] | None:
    if isinstance(item, TextContent):
        return {"text": item.text}
    if isinstance(item, ImageContent | AudioContent | VideoContent | DocumentContent):
        mime = item.mime_type or _DEFAULT_MIME.get(type(item), "application/pdf")
        if item.data is not None:
            part: dict[str, Any] = {"inlineData": {"mimeType": mime, "data": item.data}}
        elif item.uri is not None:
            part = {"fileData": {"mimeType": mime, "fileUri": item.uri}}
        else:
            return None
        if isinstance(item, VideoContent) and item.processing:
            meta = {
                key: item.processing[name]
                for name, key in (
                    ("fps", "fps"),
                    ("start_offset", "startOffset"),
                    ("end_offset", "endOffset"),
                )
                if item.processing.get(name) is not None
            }
            if meta:
                part["videoMetadata"] = meta
        return part
    return None


def _response(result: FunctionResultStep) -> dict[str, Any]:
    """Gemini's functionResponse.response must be an object."""
    value = result.result
    if isinstance(value, list) and all(isinstance(item, Content) for item in value):
        value = text_of(value)
    if result.is_error:
        return {"error": value}
    return value if isinstance(value, dict) else {"result": value}


def _generation_config(request: UpstreamRequest) -> dict[str, Any]:
    config = request.config
    gen = config.generation_config
    out: dict[str, Any] = {}
    if gen is not None:
        for name, key in (
            ("temperature", "temperature"),
            ("top_p", "topP"),
            ("top_k", "topK"),
            ("seed", "seed"),
            ("stop_sequences", "stopSequences"),
            ("max_output_tokens", "maxOutputTokens"),
        ):
            value = getattr(gen, name)
            if value is not None:
                out[key] = value
        thinking: dict[str, Any] = {}
        if gen.thinking_level:
            if request.upstream_model.removeprefix("models/").startswith("gemini-2"):
                # Gemini 2.x takes a token budget; later models take a level
                thinking["thinkingBudget"] = THINKING_BUDGETS.get(gen.thinking_level, 4096)
            else:
                level = "high" if gen.thinking_level == "xhigh" else gen.thinking_level
                thinking["thinkingLevel"] = level.upper()
        if gen.thinking_summaries:
            thinking["includeThoughts"] = gen.thinking_summaries != "none"
        if thinking:
            out["thinkingConfig"] = thinking
        if gen.image_config is not None:
            image = {"aspectRatio": gen.image_config.aspect_ratio, "imageSize": gen.image_config.image_size}
            out["imageConfig"] = {k: v for k, v in image.items() if v is not None}
    wants_json, schema = json_output(config)
    if wants_json:
        out["responseMimeType"] = "application/json"
        if schema is not None:
            # responseJsonSchema takes standard JSON Schema as clients write it; responseSchema is an
            # OpenAPI subset that rejects some of it
            out["responseJsonSchema"] = schema
    if config.response_modalities:
        out["responseModalities"] = [m.upper() for m in config.response_modalities]
    return out


def _tools(request: UpstreamRequest) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    functions: list[dict[str, Any]] = []
    tool_config: dict[str, Any] = {}
    for tool in request.config.tools or []:
        if isinstance(tool, FunctionTool):
            declaration: dict[str, Any] = {"name": tool.name}
            if tool.description:
                declaration["description"] = tool.description
            if tool.parameters is not None:
                declaration["parametersJsonSchema"] = tool.parameters
            functions.append(declaration)
        elif isinstance(tool, GoogleSearchTool):
            tools.append({"googleSearch": {}})
        elif isinstance(tool, CodeExecutionTool):
            tools.append({"codeExecution": {}})
        elif isinstance(tool, UrlContextTool):
            tools.append({"urlContext": {}})
        elif isinstance(tool, GoogleMapsTool):
            tools.append({"googleMaps": {"enableWidget": True} if tool.enable_widget else {}})
            if tool.latitude is not None and tool.longitude is not None:
                lat_lng = {"latitude": tool.latitude, "longitude": tool.longitude}
                tool_config["retrievalConfig"] = {"latLng": lat_lng}
        elif isinstance(tool, FileSearchTool):
            spec = {
                "fileSearchStoreNames": tool.file_search_store_names,
                "topK": tool.top_k,
                "metadataFilter": tool.metadata_filter,
            }
            tools.append({"fileSearch": {k: v for k, v in spec.items() if v is not None}})
        elif isinstance(tool, ComputerUseTool):
            env = f"ENVIRONMENT_{(tool.environment or 'browser').upper()}"
            use: dict[str, Any] = {"environment": env}
            if tool.excluded_predefined_functions:
                use["excludedPredefinedFunctions"] = tool.excluded_predefined_functions
            tools.append({"computerUse": use})
    if functions:
        tools.insert(0, {"functionDeclarations": functions})
    mode, names = tool_choice(request.config)
    if mode:
        calling: dict[str, Any] = {"mode": mode.upper()}
        if names:
            calling["allowedFunctionNames"] = names
        tool_config["functionCallingConfig"] = calling
    return tools, tool_config


def _safety(setting: dict[str, Any]) -> dict[str, Any]:
    category = str(setting.get("type", "")).upper()
    return {
        "category": category if category.startswith("HARM_CATEGORY_") else f"HARM_CATEGORY_{category}",
        "threshold": str(setting.get("threshold", "")).upper(),
    }


# ---------------------------------------------------------------------------------------------------------
# Response stream


class GeminiDecoder:
    """GenerateContentResponse chunks -> normalised events."""

    def __init__(self, backend: str = KIND) -> None:
        self.backend = backend
        self.steps = StepSequencer()
        self._sse = SSEDecoder()
        self._finish: str | None = None
        self._finish_message: str | None = None
        self._blocked: str | None = None
        self._usage: Usage | None = None
        self._code_call_id: str | None = None

    def feed_bytes(self, chunk: bytes) -> list[UpstreamEvent]:
        return self._messages(self._sse.feed(chunk))

    def _messages(self, messages: list[Any]) -> list[UpstreamEvent]:
        events: list[UpstreamEvent] = []
        for message in messages:
            if message.data.strip() == "[DONE]":
                continue  # not Gemini's, but some imitations send it
            try:
                chunk = msgspec.json.decode(message.data)
            except msgspec.DecodeError:
                raise UpstreamError(
                    self.backend, 0, f"malformed stream chunk: {message.data[:200]!r}"
                ) from None
            if isinstance(chunk, dict):
                events += self.feed(chunk)
        return events

    def feed(self, chunk: dict[str, Any]) -> list[UpstreamEvent]:
        error = chunk.get("error")
        if isinstance(error, dict):
            code = error.get("code")
            status = code if isinstance(code, int) else 500
            raise UpstreamError(
                self.backend, status, str(error.get("message") or error.get("status") or error)
            )
        events: list[UpstreamEvent] = []
        feedback = chunk.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            self._blocked = str(feedback["blockReason"])
        candidates = chunk.get("candidates") or []
        candidate = candidates[0] if candidates and isinstance(candidates[0], dict) else {}
        content = candidate.get("content") or {}
        for part in content.get("parts") or []:
            if isinstance(part, dict):
                events += self._part(part)
        if candidate.get("finishReason"):
            self._finish = str(candidate["finishReason"])
            self._finish_message = candidate.get("finishMessage")
        usage = chunk.get("usageMetadata")
        if isinstance(usage, dict):
            mapped = map_usage(usage)
            if mapped != self._usage:
                self._usage = mapped
                events.append(UsageReported(usage=mapped))
        return events

    def _part(self, part: dict[str, Any]) -> list[UpstreamEvent]:
        raw_signature = part.get("thoughtSignature")
        signature = (
            native.wrap(self.backend, raw_signature)
            if isinstance(raw_signature, str) and raw_signature
            else None
        )
        steps = self.steps
        if part.get("thought"):
            return steps.thought(summary=part.get("text"), signature=signature)
        before = steps.thought(signature=signature, new=True) if signature else []
        if "functionCall" in part:
            function = part["functionCall"] or {}
            call_id = function.get("id") or native.new_call_id()
            args = function.get("args")
            arguments = to_json(args if isinstance(args, dict) else {})
            return before + steps.function_call(call_id, str(function.get("name", "")), arguments)
        if "executableCode" in part:
            code = part["executableCode"] or {}
            self._code_call_id = native.new_call_id()
            code_args = {
                "code": code.get("code", ""),
                "language": str(code.get("language", "PYTHON")).lower(),
            }
            return before + steps.whole(
                CodeExecutionCallStep(id=self._code_call_id, arguments=code_args, signature=signature)
            )
        if "codeExecutionResult" in part:
            result = part["codeExecutionResult"] or {}
            step = CodeExecutionResultStep(
                call_id=self._code_call_id or native.new_call_id(),
                result=result.get("output", ""),
                is_error=result.get("outcome") not in (None, "OUTCOME_OK"),
                signature=signature,
            )
            return before + steps.whole(step)
        if "inlineData" in part:
            data = part["inlineData"] or {}
            delta = ImageDelta(data=data.get("data"), mime_type=data.get("mimeType"))
            return steps.media(delta) + before
        # text, or an empty part that only carries a signature: the signature goes after the text
        return steps.text(part.get("text") or "") + before

    def close(self) -> list[UpstreamEvent]:
        events = self._messages(self._sse.close())
        events += self.steps.end()
        events.append(self.finished())
        return events

    def finished(self) -> Finished:
        reason = self._finish
        if reason is None and self._blocked:
            message = f"The prompt was blocked by Gemini ({self._blocked})"
            return Finished(status="failed", error=ErrorInfo(code="content_blocked", message=message))
        if reason is None:
            raise UpstreamError(self.backend, 0, "the stream ended before the model finished")
        if reason == "MAX_TOKENS":
            return Finished(status="incomplete")
        if reason == "STOP":
            return Finished(status="requires_action" if self.steps.calls else "completed")
        if reason in _BLOCKED:
            message = f"Gemini stopped: {_BLOCKED[reason]} (finishReason {reason})"
            return Finished(status="failed", error=ErrorInfo(code="content_blocked", message=message))
        detail = f": {self._finish_message}" if self._finish_message else ""
        message = f"Gemini stopped with finishReason {reason}{detail}"
        return Finished(status="failed", error=ErrorInfo(code="upstream_error", message=message))


def map_usage(meta: dict[str, Any]) -> Usage:
    def by_modality(key: str) -> list[ModalityTokens] | None:
        items = meta.get(key)
        if not isinstance(items, list) or not items:
            return None
        return [
            ModalityTokens(modality=str(i.get("modality", "")).lower(), tokens=i.get("tokenCount"))
            for i in items
            if isinstance(i, dict)
        ]

    return Usage(
        total_input_tokens=meta.get("promptTokenCount"),
        total_output_tokens=meta.get("candidatesTokenCount"),
        total_thought_tokens=meta.get("thoughtsTokenCount"),
        total_cached_tokens=meta.get("cachedContentTokenCount"),
        total_tool_use_tokens=meta.get("toolUsePromptTokenCount"),
        total_tokens=meta.get("totalTokenCount"),
        input_tokens_by_modality=by_modality("promptTokensDetails"),
        output_tokens_by_modality=by_modality("candidatesTokensDetails"),
        cached_tokens_by_modality=by_modality("cacheTokensDetails"),
    )


# ---------------------------------------------------------------------------------------------------------
# Backend


class GeminiBackend(HTTPBackend):
    kind = KIND
    default_base_url = "https://generativelanguage.googleapis.com"

    def check(self, request: UpstreamRequest) -> None:
        for index, tool in enumerate(request.config.tools or []):
            if not isinstance(tool, _SUPPORTED_TOOLS):
                raise unsupported_tool(self.name, tool, index)

    def url(self, request: UpstreamRequest) -> str:
        model = quote(self.upstream_model(request).removeprefix("models/"), safe="-._~")
        return join_url(self.base_url, f"/v1beta/models/{model}:streamGenerateContent") + "?alt=sse"

    def headers(self) -> dict[str, str]:
        key = api_key(self.route)
        return {"x-goog-api-key": key} if key else {}

    def stream(self, request: UpstreamRequest) -> AsyncGenerator[UpstreamEvent, None]:
        return self._run(
            self.url(request), self.headers(), build_body(request, self.name), GeminiDecoder(self.name)
        )
