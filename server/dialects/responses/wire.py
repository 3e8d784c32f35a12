"""The Responses API's objects (OpenAI's names, field for field): the Response, its output items, its
usage, the input items of its listing and the list page. Shaped after the openai SDK's own types
(`openai.types.responses`) and the Open Responses models (`openresponses-types`), which require every field
of a Response to be present (null where there is nothing): a Response and its items are encoded whole,
never with their defaults left out. The create body is decoded from builtins (decode.py), not a Struct:
its union members are told apart by OpenAI's own rules (a message has a `role` and may omit `type`)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec


class Body(msgspec.Struct, kw_only=True, gc=False):
    """An object of the Responses API: every field encoded, `null` included, as OpenAI sends them."""


class Sparse(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    """An object whose optional fields OpenAI leaves out when they have no value."""


# ---------------------------------------------------------------------------------------------------------
# Output items


class OutputText(Body, tag="output_text", tag_field="type"):
    text: str
    annotations: list[dict[str, Any]] = []


class Refusal(Body, tag="refusal", tag_field="type"):
    refusal: str


class OutputMessage(Body, tag="message", tag_field="type"):
    id: str
    status: str
    role: Literal["assistant"] = "assistant"
    content: list[OutputText | Refusal] = []


class FunctionCall(Body, tag="function_call", tag_field="type"):
    id: str
    call_id: str
    name: str
    #: a JSON text, as OpenAI sends it (ours are objects)
    arguments: str
    status: str


class SummaryText(Body, tag="summary_text", tag_field="type"):
    text: str


class ReasoningText(Body, tag="reasoning_text", tag_field="type"):
    text: str


class Reasoning(Body, tag="reasoning", tag_field="type"):
    id: str
    summary: list[SummaryText] = []
    content: list[ReasoningText] | None = None
    #: the model's signature of its thinking, which a stateless client sends back (store=false)
    encrypted_content: str | None = None
    status: str | None = None


class McpCall(Body, tag="mcp_call", tag_field="type"):
    id: str
    server_label: str
    name: str
    arguments: str
    output: str | None = None
    error: str | None = None
    status: str = "completed"
    approval_request_id: str | None = None


OutputItem = OutputMessage | FunctionCall | Reasoning | McpCall


# ---------------------------------------------------------------------------------------------------------
# Input items (the listing of GET /v1/responses/{id}/input_items)


class InputText(Body, tag="input_text", tag_field="type"):
    text: str


class InputImage(Body, tag="input_image", tag_field="type"):
    image_url: str | None = None
    detail: str = "auto"


class InputFile(Sparse, tag="input_file", tag_field="type"):
    file_data: str | None = None
    file_url: str | None = None
    filename: str | None = None


InputContent = InputText | InputImage | InputFile


class InputMessage(Body, tag="message", tag_field="type"):
    """A message of the input: the user's (input_* parts) or, replayed by the client, the model's (the
    output_text parts of an output message)."""

    id: str
    role: str
    status: str = "completed"
    content: list[InputContent | OutputText | Refusal] = []


class FunctionCallOutput(Body, tag="function_call_output", tag_field="type"):
    id: str
    call_id: str
    output: str
    status: str = "completed"


InputItem = InputMessage | FunctionCallOutput | FunctionCall | Reasoning | McpCall


class ItemList(Body, kw_only=True):
    object: Literal["list"] = "list"
    data: list[InputItem]
    first_id: str | None
    last_id: str | None
    has_more: bool


# ---------------------------------------------------------------------------------------------------------
# The Response


class InputTokensDetails(Body):
    cached_tokens: int = 0
    cache_write_tokens: int = 0


class OutputTokensDetails(Body):
    reasoning_tokens: int = 0


class Usage(Body):
    input_tokens: int
    input_tokens_details: InputTokensDetails
    output_tokens: int
    output_tokens_details: OutputTokensDetails
    total_tokens: int


class ResponseError(Body):
    code: str
    message: str


class IncompleteDetails(Body):
    reason: str


class ReasoningConfig(Body):
    effort: str | None = None
    summary: str | None = None


class TextConfig(Sparse):
    #: `{"type": "text"}`, `{"type": "json_object"}` or `{"type": "json_schema", "name", "schema", ...}`
    format: dict[str, Any]
    verbosity: str | None = None


class Response(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    """Every field but `warnings` has no default, so every one is encoded (omit_defaults leaves out only
    a field equal to its default): `warnings`, our extension as on Google's interactions, appears only
    on a create's reply that has some (the unknown fields it ignored)."""

    id: str
    object: Literal["response"]
    created_at: int
    completed_at: int | None
    status: str
    background: bool
    error: ResponseError | None
    incomplete_details: IncompleteDetails | None
    instructions: str | None
    max_output_tokens: int | None
    max_tool_calls: int | None
    model: str
    output: list[OutputItem]
    parallel_tool_calls: bool
    previous_response_id: str | None
    reasoning: ReasoningConfig | None
    service_tier: str
    store: bool
    temperature: float
    text: TextConfig
    tool_choice: str | dict[str, Any]
    tools: list[dict[str, Any]]
    top_p: float
    truncation: str
    usage: Usage | None
    user: str | None
    metadata: dict[str, str]
    safety_identifier: str | None
    prompt_cache_key: str | None
    presence_penalty: float
    frequency_penalty: float
    top_logprobs: int
    warnings: list[str] | None = None


class Deleted(Body):
    id: str
    object: Literal["response.deleted"] = "response.deleted"
    deleted: bool = True
