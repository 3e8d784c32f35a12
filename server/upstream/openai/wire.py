"""Chat completions on the wire: the request we send and the `chat.completion.chunk`s we read.

Names are the wire's own (snake_case). Messages are a union tagged by `role`, content parts and tools by
`type`. What we send leaves unset fields out, so that a local server never sees a parameter the client did
not ask for. What we read has a default for every field, since servers differ in what they fill in, and
the rest of a chunk (ids, `system_fingerprint`, `logprobs`, a server's own extensions) is skipped unread.
"""

from __future__ import annotations

from typing import Any

from ...protocol.base import Wire

#: the backend kind in models.toml, and the name native data is sealed with when no other is given
KIND = "openai"


# ---------------------------------------------------------------------------------------------------------
# Request


class TextPart(Wire, tag_field="type", tag="text"):
    text: str


class ImageURL(Wire):
    #: a URL or a `data:` URL
    url: str


class ImagePart(Wire, tag_field="type", tag="image_url"):
    image_url: ImageURL


class InputAudio(Wire):
    data: str
    #: "wav" or "mp3"
    format: str


class AudioPart(Wire, tag_field="type", tag="input_audio"):
    input_audio: InputAudio


class File(Wire):
    filename: str
    file_data: str


class FilePart(Wire, tag_field="type", tag="file"):
    file: File


ContentPart = TextPart | ImagePart | AudioPart | FilePart


class FunctionCall(Wire):
    name: str
    #: the arguments as a JSON text
    arguments: str


class ToolCall(Wire, tag_field="type", tag="function"):
    id: str
    function: FunctionCall


class SystemMessage(Wire, tag_field="role", tag="system"):
    content: str


class UserMessage(Wire, tag_field="role", tag="user"):
    content: str | list[ContentPart]


class AssistantMessage(Wire, tag_field="role", tag="assistant"):
    #: required, so always sent: `null` beside tool calls, as OpenAI writes it
    content: str | None
    tool_calls: list[ToolCall] | None = None


class ToolMessage(Wire, tag_field="role", tag="tool"):
    tool_call_id: str
    content: str


Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage


class FunctionSpec(Wire):
    name: str
    parameters: dict[str, Any]
    description: str | None = None


class ToolSpec(Wire, tag_field="type", tag="function"):
    function: FunctionSpec


class FunctionName(Wire):
    name: str


class NamedToolChoice(Wire, tag_field="type", tag="function"):
    """Call this function."""

    function: FunctionName


class JsonSchema(Wire):
    name: str
    schema: dict[str, Any]


class JsonSchemaFormat(Wire, tag_field="type", tag="json_schema"):
    json_schema: JsonSchema


class JsonObjectFormat(Wire, tag_field="type", tag="json_object"):
    """Any JSON object."""


class StreamOptions(Wire):
    include_usage: bool


class ChatRequest(Wire):
    model: str
    messages: list[Message]
    stream: bool
    stream_options: StreamOptions
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    stop: list[str] | None = None
    #: OpenAI's own name (its reasoning models reject `max_tokens`)
    max_completion_tokens: int | None = None
    #: the name local servers know
    max_tokens: int | None = None
    #: vLLM, llama.cpp and Ollama take it; OpenAI rejects it
    top_k: int | None = None
    reasoning_effort: str | None = None
    tools: list[ToolSpec] | None = None
    #: "auto", "required", "none", or a named function
    tool_choice: str | NamedToolChoice | None = None
    response_format: JsonSchemaFormat | JsonObjectFormat | None = None


# ---------------------------------------------------------------------------------------------------------
# Response chunks


class FunctionDelta(Wire):
    name: str | None = None
    #: a fragment of the arguments' JSON text; a few servers send the arguments whole, as an object
    arguments: Any = None


class ToolCallDelta(Wire):
    #: which call of the turn the fragment belongs to; a few servers leave it out
    index: int | None = None
    id: str | None = None
    function: FunctionDelta | None = None


class ChoiceDelta(Wire):
    #: a list (Mistral's typed chunks) is not text we can take
    content: str | list[Any] | None = None
    #: reasoning as DeepSeek and vLLM name it
    reasoning_content: str | None = None
    #: reasoning as Ollama and OpenRouter name it
    reasoning: str | None = None
    tool_calls: list[ToolCallDelta] | None = None


class Choice(Wire):
    index: int | None = 0
    delta: ChoiceDelta | None = None
    finish_reason: str | None = None


class PromptTokensDetails(Wire):
    cached_tokens: int | None = None


class CompletionTokensDetails(Wire):
    reasoning_tokens: int | None = None


class CompletionUsage(Wire):
    prompt_tokens: int | None = None
    #: OpenAI counts reasoning tokens in here
    completion_tokens: int | None = None
    total_tokens: int | None = None
    prompt_tokens_details: PromptTokensDetails | None = None
    completion_tokens_details: CompletionTokensDetails | None = None


class StreamError(Wire):
    """`data: {"error": {...}}` after a 200."""

    message: str | None = None
    type: str | None = None
    #: an HTTP status (vLLM), a name (OpenAI's "rate_limit_exceeded"), or null
    code: int | str | None = None


class ChatCompletionChunk(Wire):
    #: `[]` on the last chunk, the one that carries the usage
    choices: list[Choice] | None = None
    usage: CompletionUsage | None = None
    error: StreamError | str | None = None
