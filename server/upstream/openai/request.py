"""The `ChatRequest` for an `UpstreamRequest`: the history as messages, sampling, tools and output format.

Chat completions have no signature to send back, so thoughts are never replayed; built-in tool steps and
unknown steps are skipped too. A result whose call is not in the history still reaches the model, as text.
"""

from __future__ import annotations

from ...protocol.content import (
    AudioContent,
    Content,
    DocumentContent,
    ImageContent,
    TextContent,
    VideoContent,
    text_of,
)
from ...protocol.steps import FunctionCallStep, FunctionResultStep, ModelOutputStep, Step, UserInputStep
from ...protocol.tools import FunctionTool, GenerationConfig
from .. import native
from ..base import UpstreamRequest
from ..emit import (
    NO_RESULT,
    OpenCalls,
    data_url,
    json_output,
    result_text,
    to_json,
    tool_choice,
    unsupported_content,
)
from . import wire
from .wire import KIND

_AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}
_EFFORT = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}
_CHOICE = {"auto": "auto", "any": "required", "none": "none", "validated": "auto"}


def check_content(item: Content, backend: str = KIND) -> None:
    if isinstance(item, VideoContent):
        raise unsupported_content(backend, item)
    if isinstance(item, AudioContent) and (item.data is None or _audio_format(item) is None):
        raise unsupported_content(backend, item, "only inline wav or mp3 data")
    if isinstance(item, DocumentContent) and item.data is None:
        raise unsupported_content(backend, item, "only inline data, not a URI")


def _audio_format(item: AudioContent) -> str | None:
    return _AUDIO_FORMATS.get(item.mime_type or "audio/wav")


def content_part(item: Content) -> wire.ContentPart | None:
    if isinstance(item, TextContent):
        return wire.TextPart(text=item.text)
    if isinstance(item, ImageContent):
        url = data_url(item.mime_type or "image/png", item.data) if item.data is not None else item.uri
        return wire.ImagePart(image_url=wire.ImageURL(url=url)) if url else None
    if isinstance(item, AudioContent) and item.data is not None:
        audio = wire.InputAudio(data=item.data, format=_audio_format(item) or "wav")
        return wire.AudioPart(input_audio=audio)
    if isinstance(item, DocumentContent) and item.data is not None:
        mime = item.mime_type or "application/pdf"
        name = "document." + mime.rsplit("/", 1)[-1]
        return wire.FilePart(file=wire.File(filename=name, file_data=data_url(mime, item.data)))
    return None


class _Messages:
    def __init__(self) -> None:
        self.items: list[wire.Message] = []

    def user(self, parts: list[wire.ContentPart]) -> None:
        last = self.items[-1] if self.items else None
        if isinstance(last, wire.UserMessage) and isinstance(last.content, list):
            last.content.extend(parts)  # two user inputs in a row become one message
        else:
            self.items.append(wire.UserMessage(content=list(parts)))

    def assistant(self) -> wire.AssistantMessage:
        last = self.items[-1] if self.items else None
        if isinstance(last, wire.AssistantMessage):
            return last
        message = wire.AssistantMessage(content=None)
        self.items.append(message)
        return message

    def tool(self, call_id: str, content: str) -> None:
        self.items.append(wire.ToolMessage(tool_call_id=native.safe_call_id(call_id), content=content))

    def finish(self) -> list[wire.Message]:
        for message in self.items:
            # plain strings where possible: many local servers take nothing else
            if isinstance(message, wire.UserMessage) and isinstance(message.content, list):
                texts = [p.text for p in message.content if isinstance(p, wire.TextPart)]
                if len(texts) == len(message.content):
                    message.content = "\n".join(texts)
        return self.items


def build_messages(history: list[Step], system: str | None = None) -> list[wire.Message]:
    out = _Messages()
    if system:
        out.items.append(wire.SystemMessage(content=system))
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
                message.content = (message.content or "") + text
        elif isinstance(step, FunctionCallStep):
            message = out.assistant()
            message.tool_calls = [*(message.tool_calls or ()), _tool_call(step)]
            open_calls.called(step)
        elif isinstance(step, FunctionResultStep):
            if open_calls.answered(step):
                out.tool(step.call_id, result_text(step.result))
            else:
                text = f"Result of function {calls.name_of(step)}: {result_text(step.result)}"
                out.user([wire.TextPart(text=text)])
    for missing in open_calls.unanswered_before(None):
        out.tool(missing.id, NO_RESULT)
    return out.finish()


def _tool_call(step: FunctionCallStep) -> wire.ToolCall:
    function = wire.FunctionCall(name=step.name, arguments=to_json(step.arguments))
    return wire.ToolCall(id=native.safe_call_id(step.id), function=function)


def build_body(request: UpstreamRequest, base_url: str = "") -> wire.ChatRequest:
    config = request.config
    body = wire.ChatRequest(
        model=request.upstream_model,
        messages=build_messages(request.history, config.system_instruction),
        stream=True,
        stream_options=wire.StreamOptions(include_usage=True),
    )
    if config.generation_config is not None:
        _sampling(body, config.generation_config, is_openai="api.openai.com" in base_url)
    tools = [_tool(tool) for tool in config.tools or [] if isinstance(tool, FunctionTool)]
    if tools:
        body.tools = tools
        mode, names = tool_choice(config)
        if names and len(names) == 1 and mode in ("any", "validated"):
            body.tool_choice = wire.NamedToolChoice(function=wire.FunctionName(name=names[0]))
        elif mode in _CHOICE:
            body.tool_choice = _CHOICE[mode]
    wants_json, schema = json_output(config)
    if schema is not None:
        body.response_format = wire.JsonSchemaFormat(
            json_schema=wire.JsonSchema(name="response", schema=schema)
        )
    elif wants_json:
        body.response_format = wire.JsonObjectFormat()
    return body


def _sampling(body: wire.ChatRequest, gen: GenerationConfig, *, is_openai: bool) -> None:
    body.temperature = gen.temperature
    body.top_p = gen.top_p
    body.seed = gen.seed
    body.stop = gen.stop_sequences or None
    # OpenAI itself wants the newer name (reasoning models reject max_tokens); local servers the older
    if is_openai:
        body.max_completion_tokens = gen.max_output_tokens
    else:
        body.max_tokens = gen.max_output_tokens
        body.top_k = gen.top_k  # vLLM, llama.cpp and Ollama take it; OpenAI rejects unknown fields
    body.reasoning_effort = _EFFORT.get(gen.thinking_level or "")


def _tool(tool: FunctionTool) -> wire.ToolSpec:
    parameters = tool.parameters or {"type": "object", "properties": {}}
    function = wire.FunctionSpec(name=tool.name, description=tool.description or None, parameters=parameters)
    return wire.ToolSpec(function=function)
