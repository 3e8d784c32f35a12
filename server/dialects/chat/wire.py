"""The body of `POST /v1/chat/completions`, as OpenAI names it (the openai SDK's
`types/chat/completion_create_params.py` and the message and part types it names).

Messages are a union tagged by `role`, content parts and tools by `type`: a wrong tag is a 400 naming its
path. Fields OpenAI defines that this server does not honour are declared too, so that decode.py can
answer each with a 400 naming it rather than a warning that it is unknown.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec


class Body(msgspec.Struct, kw_only=True, omit_defaults=True):
    pass


class Tagged(Body, tag_field="type"):
    pass


class ByRole(Body, tag_field="role"):
    pass


# -- content parts ----------------------------------------------------------------------------------------


class TextPart(Tagged, tag="text", kw_only=True):
    text: str
    #: OpenAI's explicit prompt-cache marks: where the provider caches, never what it answers
    prompt_cache_breakpoint: dict[str, Any] | None = None


class ImageUrl(Body, kw_only=True):
    #: a `data:` URL (base64) or an http(s) URL
    url: str
    detail: Literal["auto", "low", "high", "original"] | None = None


class ImagePart(Tagged, tag="image_url", kw_only=True):
    image_url: ImageUrl
    prompt_cache_breakpoint: dict[str, Any] | None = None


class InputAudio(Body, kw_only=True):
    data: str
    format: Literal["wav", "mp3"]


class AudioPart(Tagged, tag="input_audio", kw_only=True):
    input_audio: InputAudio


class FileData(Body, kw_only=True):
    file_data: str | None = None
    file_id: str | None = None
    filename: str | None = None


class FilePart(Tagged, tag="file", kw_only=True):
    file: FileData
    prompt_cache_breakpoint: dict[str, Any] | None = None


class RefusalPart(Tagged, tag="refusal", kw_only=True):
    refusal: str


UserPart = TextPart | ImagePart | AudioPart | FilePart


# -- messages ---------------------------------------------------------------------------------------------


class SystemMessage(ByRole, tag="system", kw_only=True):
    content: str | list[TextPart]
    name: str | None = None


class DeveloperMessage(ByRole, tag="developer", kw_only=True):
    content: str | list[TextPart]
    name: str | None = None


class UserMessage(ByRole, tag="user", kw_only=True):
    content: str | list[UserPart]
    name: str | None = None


class FunctionCall(msgspec.Struct, kw_only=True):
    name: str
    #: a JSON object, as a string
    arguments: str


class ToolCall(msgspec.Struct, kw_only=True):
    """A function tool call, in an assistant message sent back and in a completion's message."""

    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class AssistantMessage(ByRole, tag="assistant", kw_only=True):
    content: str | list[TextPart | RefusalPart] | None = None
    refusal: str | None = None
    tool_calls: list[ToolCall] | None = None
    name: str | None = None
    audio: dict[str, Any] | None = None
    function_call: dict[str, Any] | None = None


class ToolMessage(ByRole, tag="tool", kw_only=True):
    content: str | list[TextPart]
    tool_call_id: str


class FunctionMessage(ByRole, tag="function", kw_only=True):
    """The deprecated `functions` API's result message: refused (decode.py), tools are served."""

    name: str
    content: str | None = None


Message = SystemMessage | DeveloperMessage | UserMessage | AssistantMessage | ToolMessage | FunctionMessage


# -- tools, formats, options ------------------------------------------------------------------------------


class FunctionDefinition(Body, kw_only=True):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class FunctionTool(Tagged, tag="function", kw_only=True):
    function: FunctionDefinition


class CustomTool(Tagged, tag="custom", kw_only=True):
    custom: dict[str, Any]


class FunctionName(Body, kw_only=True):
    name: str


class NamedToolChoice(Tagged, tag="function", kw_only=True):
    function: FunctionName


class AllowedTools(Body, kw_only=True):
    mode: Literal["auto", "required"]
    tools: list[dict[str, Any]]


class AllowedToolsChoice(Tagged, tag="allowed_tools", kw_only=True):
    allowed_tools: AllowedTools


class CustomToolChoice(Tagged, tag="custom", kw_only=True):
    custom: dict[str, Any]


ToolChoice = Literal["none", "auto", "required"] | NamedToolChoice | AllowedToolsChoice | CustomToolChoice


class TextFormat(Tagged, tag="text", kw_only=True):
    pass


class JsonObjectFormat(Tagged, tag="json_object", kw_only=True):
    pass


class JsonSchema(Body, kw_only=True):
    name: str
    description: str | None = None
    schema: dict[str, Any] | None = None
    strict: bool | None = None


class JsonSchemaFormat(Tagged, tag="json_schema", kw_only=True):
    json_schema: JsonSchema


class StreamOptions(Body, kw_only=True):
    include_usage: bool | None = None
    #: OpenAI pads chunks against a side channel; these chunks are not padded, and say nothing else
    include_obfuscation: bool | None = None


class CreateChatCompletion(Body, kw_only=True):
    """The create body. Each field is honoured (decode.py maps it), or answered with a 400 naming it
    unless its value asks for nothing (`n: 1`, `logprobs: false`), or ignored where it changes no answer
    (the prompt-cache fields: how OpenAI bills, not what it says). `user` and `safety_identifier` are
    labels of a stored completion (openai_labels.py)."""

    messages: list[Message]
    model: str
    audio: dict[str, Any] | None = None
    frequency_penalty: float | None = None
    function_call: Any = None
    functions: list[dict[str, Any]] | None = None
    logit_bias: dict[str, int] | None = None
    logprobs: bool | None = None
    max_completion_tokens: int | None = None
    max_tokens: int | None = None
    metadata: dict[str, str] | None = None
    modalities: list[str] | None = None
    moderation: dict[str, Any] | None = None
    n: int | None = None
    parallel_tool_calls: bool | None = None
    prediction: dict[str, Any] | None = None
    presence_penalty: float | None = None
    prompt_cache_key: str | None = None
    prompt_cache_options: dict[str, Any] | None = None
    prompt_cache_retention: str | None = None
    reasoning_effort: str | None = None
    response_format: TextFormat | JsonObjectFormat | JsonSchemaFormat | None = None
    safety_identifier: str | None = None
    seed: int | None = None
    service_tier: str | None = None
    stop: str | list[str] | None = None
    store: bool | None = None
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    temperature: float | None = None
    tool_choice: ToolChoice | None = None
    tools: list[FunctionTool | CustomTool] | None = None
    top_logprobs: int | None = None
    top_p: float | None = None
    user: str | None = None
    verbosity: str | None = None
    web_search_options: dict[str, Any] | None = None


class UpdateChatCompletion(Body, kw_only=True):
    """`POST /v1/chat/completions/{id}`: new metadata for a stored completion."""

    metadata: dict[str, str] | None
