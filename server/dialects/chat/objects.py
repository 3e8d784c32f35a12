"""What the Chat Completions dialect answers, as OpenAI names it (the openai SDK's `chat_completion.py`,
`chat_completion_chunk.py`, `chat_completion_store_message.py`, `chat_completion_deleted.py`,
`completion_usage.py`). A field OpenAI sends as `null` is None here; one it leaves out is UNSET (msgspec
never encodes an UNSET field)."""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType

from .wire import ImagePart, TextPart, ToolCall

FinishReason = Literal["stop", "length", "tool_calls", "content_filter"]


class Out(msgspec.Struct, kw_only=True):
    pass


class CompletionTokensDetails(Out, kw_only=True):
    reasoning_tokens: int


class PromptTokensDetails(Out, kw_only=True):
    cached_tokens: int


class CompletionUsage(Out, kw_only=True):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    completion_tokens_details: CompletionTokensDetails
    prompt_tokens_details: PromptTokensDetails


class ChatCompletionMessage(Out, kw_only=True):
    role: Literal["assistant"] = "assistant"
    content: str | None
    refusal: str | None = None
    tool_calls: list[ToolCall] | UnsetType = UNSET


class Choice(Out, kw_only=True):
    index: int = 0
    message: ChatCompletionMessage
    finish_reason: FinishReason | None
    logprobs: None = None


class ChatCompletion(Out, kw_only=True):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: CompletionUsage | UnsetType = UNSET
    metadata: dict[str, str] | UnsetType = UNSET
    #: our extension, as in Google's dialect and the Responses API: what the create ignored or does not
    #: enforce (unknown fields, `strict`); on the create's reply only
    warnings: list[str] | UnsetType = UNSET


# -- the stream -------------------------------------------------------------------------------------------


class ChoiceDeltaFunction(Out, kw_only=True):
    name: str | UnsetType = UNSET
    arguments: str | UnsetType = UNSET


class ChoiceDeltaToolCall(Out, kw_only=True):
    index: int
    id: str | UnsetType = UNSET
    type: Literal["function"] | UnsetType = UNSET
    function: ChoiceDeltaFunction | UnsetType = UNSET


class ChoiceDelta(Out, kw_only=True):
    role: Literal["assistant"] | UnsetType = UNSET
    content: str | UnsetType = UNSET
    refusal: UnsetType | None = UNSET
    tool_calls: list[ChoiceDeltaToolCall] | UnsetType = UNSET


class ChunkChoice(Out, kw_only=True):
    index: int = 0
    delta: ChoiceDelta
    finish_reason: FinishReason | None = None
    logprobs: None = None


class ChatCompletionChunk(Out, kw_only=True):
    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    #: empty in the usage chunk (`stream_options.include_usage`)
    choices: list[ChunkChoice]
    usage: CompletionUsage | UnsetType = UNSET


class StreamError(Out, kw_only=True):
    """What ends a stream whose run failed: `data: {"error": {...}}`, which the SDK raises as an APIError
    (the error object is OpenAI's envelope's, api/openai/errors.py)."""

    message: str
    type: str = "server_error"
    param: None = None
    code: str | None = None


class StreamErrorBody(Out, kw_only=True):
    error: StreamError


# -- stored completions -----------------------------------------------------------------------------------


class StoreMessage(Out, kw_only=True):
    """A message of a stored completion's request (`GET .../{id}/messages`): its text as `content`, its
    parts (text and images) as `content_parts` when it had parts."""

    id: str
    role: str
    content: str | None
    name: str | UnsetType = UNSET
    content_parts: list[TextPart | ImagePart] | None
    tool_calls: list[ToolCall] | UnsetType = UNSET
    tool_call_id: str | UnsetType = UNSET


class ChatCompletionList(Out, kw_only=True):
    object: Literal["list"] = "list"
    data: list[ChatCompletion]
    first_id: str | None
    last_id: str | None
    has_more: bool


class StoreMessageList(Out, kw_only=True):
    object: Literal["list"] = "list"
    data: list[StoreMessage]
    first_id: str | None
    last_id: str | None
    has_more: bool


class ChatCompletionDeleted(Out, kw_only=True):
    id: str
    object: Literal["chat.completion.deleted"] = "chat.completion.deleted"
    deleted: bool = True
