"""Gemini's `generateContent` on the wire, both ways: the request our Gemini backend sends and the
`GenerateContentResponse`s it reads (upstream/gemini/), and the request this server's own generateContent
reads and the responses it answers (dialects/generate/).

The wire is camelCase (`rename="camel"`). A `Part` and a `Content` have one shape both ways. Fields are left
out when unset (`omit_defaults`), as Gemini treats a field that is present as set; every field has a
default, since a chunk carries only what changed, and whatever else a chunk holds (`citationMetadata`,
grounding, ...) is skipped unread.
"""

from __future__ import annotations

from typing import Any

from ...protocol.base import Wire


class Camel(Wire, rename="camel"):
    """A Gemini object: camelCase names, unset fields left out."""


class Empty(Camel):
    """`{}`: a built-in tool that takes no settings."""


# ---------------------------------------------------------------------------------------------------------
# Content, both ways


class Blob(Camel):
    mime_type: str | None = None
    data: str | None = None


class FileData(Camel):
    mime_type: str
    file_uri: str


class VideoMetadata(Camel):
    fps: float | None = None
    start_offset: str | None = None
    end_offset: str | None = None


class FunctionCall(Camel):
    #: Gemini's own call id; the Developer API sends none, so calls are paired by name and order
    id: str | None = None
    name: str = ""
    args: dict[str, Any] | None = None


class FunctionResponse(Camel):
    name: str
    #: always an object: Gemini rejects any other JSON value here
    response: dict[str, Any]
    #: the call's id, where its call had one (Vertex's); the Developer API pairs by name and order
    id: str | None = None


class ExecutableCode(Camel, omit_defaults=False):
    language: str = "PYTHON"
    code: str = ""


class CodeExecutionResult(Camel, omit_defaults=False):
    outcome: str | None = None
    output: str = ""


class Part(Camel):
    """Text, inline or file data, a function call or response, or code; any of them may carry a signature."""

    text: str | None = None
    thought: bool | None = None
    thought_signature: str | None = None
    inline_data: Blob | None = None
    file_data: FileData | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None
    executable_code: ExecutableCode | None = None
    code_execution_result: CodeExecutionResult | None = None
    video_metadata: VideoMetadata | None = None


class Content(Camel):
    #: "user" or "model"; the system instruction has none
    role: str | None = None
    parts: list[Part] = []


# ---------------------------------------------------------------------------------------------------------
# Request


class ThinkingConfig(Camel):
    #: Gemini 2.x: a token budget
    thinking_budget: int | None = None
    #: later models: MINIMAL, LOW, MEDIUM or HIGH
    thinking_level: str | None = None
    include_thoughts: bool | None = None


class ImageConfig(Camel):
    aspect_ratio: str | None = None
    image_size: str | None = None


class GenerationConfig(Camel):
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None
    stop_sequences: list[str] | None = None
    max_output_tokens: int | None = None
    thinking_config: ThinkingConfig | None = None
    image_config: ImageConfig | None = None
    response_mime_type: str | None = None
    #: standard JSON Schema as clients write it (`responseSchema` takes an OpenAPI subset that rejects some)
    response_json_schema: dict[str, Any] | None = None
    response_modalities: list[str] | None = None
    # read by the generateContent dialect only (dialects/generate/decode.py: served, or refused by name)
    #: Google's OpenAPI subset (`type: "OBJECT"`, ...)
    response_schema: dict[str, Any] | None = None
    candidate_count: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    response_logprobs: bool | None = None
    logprobs: int | None = None
    media_resolution: str | None = None


class FunctionDeclaration(Camel):
    name: str
    description: str | None = None
    parameters_json_schema: dict[str, Any] | None = None
    #: Google's OpenAPI subset, as the SDKs write a Python function's (read by the dialect only)
    parameters: dict[str, Any] | None = None


class GoogleMaps(Camel):
    enable_widget: bool | None = None


class FileSearch(Camel):
    file_search_store_names: list[str] | None = None
    top_k: int | None = None
    metadata_filter: str | None = None


class ComputerUse(Camel):
    #: ENVIRONMENT_BROWSER, ...
    environment: str
    excluded_predefined_functions: list[str] | None = None


class Tool(Camel):
    """One entry of `tools`: exactly one of its fields is set."""

    function_declarations: list[FunctionDeclaration] | None = None
    google_search: Empty | None = None
    code_execution: Empty | None = None
    url_context: Empty | None = None
    google_maps: GoogleMaps | None = None
    file_search: FileSearch | None = None
    computer_use: ComputerUse | None = None


class FunctionCallingConfig(Camel):
    #: AUTO, ANY, NONE or VALIDATED
    mode: str
    allowed_function_names: list[str] | None = None


class LatLng(Camel):
    latitude: float
    longitude: float


class RetrievalConfig(Camel):
    lat_lng: LatLng


class ToolConfig(Camel):
    function_calling_config: FunctionCallingConfig | None = None
    retrieval_config: RetrievalConfig | None = None


class SafetySetting(Camel):
    category: str
    threshold: str


class GenerateContentRequest(Camel):
    contents: list[Content]
    #: in a countTokens body's `generateContentRequest` (the model of the path, again)
    model: str | None = None
    system_instruction: Content | None = None
    generation_config: GenerationConfig | None = None
    tools: list[Tool] | None = None
    tool_config: ToolConfig | None = None
    safety_settings: list[SafetySetting] | None = None
    cached_content: str | None = None


# ---------------------------------------------------------------------------------------------------------
# Response chunks


class Candidate(Camel):
    content: Content | None = None
    finish_reason: str | None = None
    finish_message: str | None = None
    index: int | None = None


class PromptFeedback(Camel):
    block_reason: str | None = None


class ModalityTokenCount(Camel):
    modality: str = ""
    token_count: int | None = None


class UsageMetadata(Camel):
    prompt_token_count: int | None = None
    candidates_token_count: int | None = None
    thoughts_token_count: int | None = None
    cached_content_token_count: int | None = None
    tool_use_prompt_token_count: int | None = None
    total_token_count: int | None = None
    prompt_tokens_details: list[ModalityTokenCount] | None = None
    candidates_tokens_details: list[ModalityTokenCount] | None = None
    cache_tokens_details: list[ModalityTokenCount] | None = None


class Status(Camel):
    """A `google.rpc.Status`: how Gemini reports an error, also inside a stream that began with a 200."""

    code: int | None = None
    message: str | None = None
    status: str | None = None


class GenerateContentResponse(Camel):
    candidates: list[Candidate] | None = None
    prompt_feedback: PromptFeedback | None = None
    usage_metadata: UsageMetadata | None = None
    model_version: str | None = None
    response_id: str | None = None
    error: Status | None = None


# ---------------------------------------------------------------------------------------------------------
# countTokens


class CountTokensRequest(Camel):
    """`contents`, or a whole `generateContentRequest` (its system instruction and tools count too)."""

    contents: list[Content] | None = None
    generate_content_request: GenerateContentRequest | None = None


class CountTokensResponse(Camel):
    total_tokens: int
    cached_content_token_count: int | None = None
