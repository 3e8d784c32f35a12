"""An answered interaction as Gemini's `GenerateContentResponse`, and our usage as its `usageMetadata`.

    thought (summary, signature)      -> a part {text, thought: true, thoughtSignature}; a signature with no
                                         summary rides on the turn's next part (an empty text part at the
                                         end), where Gemini puts it and a client gives it back
    model_output text, media          -> {text}, {inlineData} / {fileData}
    function_call                     -> {functionCall: {name, args}} (no id: as Gemini's Developer API)
    status completed, requires_action -> finishReason STOP; incomplete, budget_exceeded -> MAX_TOKENS;
                                         failed by a content block -> SAFETY (a failure otherwise is an
                                         error, api/generate.py)
    usage                             -> promptTokenCount (with tool-use tokens), candidatesTokenCount,
                                         thoughtsTokenCount, cachedContentTokenCount, totalTokenCount

`modelVersion` is the model the request named; `responseId` is the turn's own id (nothing is stored).
"""

from __future__ import annotations

from typing import Protocol

from ...protocol import status as st
from ...protocol.content import (
    AudioContent,
    Content,
    DocumentContent,
    ImageContent,
    TextContent,
    VideoContent,
)
from ...protocol.interaction import ErrorInfo, Interaction, Usage
from ...protocol.steps import FunctionCallStep, ModelOutputStep, Step, ThoughtStep
from . import wire

BLOCKED = "content_blocked"
_LENGTH = frozenset({st.INCOMPLETE, "budget_exceeded"})


class Ended(Protocol):
    """What a turn's end is told from: its interaction, or as much of it as the stream's renderer reads."""

    @property
    def status(self) -> str: ...

    @property
    def errors(self) -> list[ErrorInfo] | None: ...


def response(interaction: Interaction, response_id: str) -> wire.GenerateContentResponse:
    parts = parts_of(interaction.steps or [])
    candidate = wire.Candidate(
        content=wire.Content(role="model", parts=parts),
        finish_reason=finish_reason(interaction),
        index=0,
    )
    return wire.GenerateContentResponse(
        candidates=[candidate],
        usage_metadata=usage_metadata(interaction.usage),
        model_version=interaction.model or None,
        response_id=response_id,
    )


def parts_of(steps: list[Step]) -> list[wire.Part]:
    parts: list[wire.Part] = []
    pending: str | None = None  # a signature waiting for the next part
    for step in steps:
        made = step_parts(step)
        if isinstance(step, ThoughtStep) and not made:
            pending = step.signature or pending
            continue
        if pending and made:
            made[0].thought_signature, pending = pending, None
        parts.extend(made)
    if pending:
        parts.append(wire.Part(text="", thought_signature=pending))
    return parts


def step_parts(step: Step) -> list[wire.Part]:
    if isinstance(step, ThoughtStep):
        summary = "".join(c.text for c in step.summary or [] if isinstance(c, TextContent))
        if not summary:
            return []
        return [wire.Part(text=summary, thought=True, thought_signature=step.signature)]
    if isinstance(step, ModelOutputStep):
        return [part for part in (content_part(c) for c in step.content or []) if part is not None]
    if isinstance(step, FunctionCallStep):
        return [wire.Part(function_call=wire.FunctionCall(name=step.name, args=step.arguments or {}))]
    return []


def content_part(content: Content) -> wire.Part | None:
    if isinstance(content, TextContent):
        return wire.Part(text=content.text)
    if isinstance(content, ImageContent | AudioContent | VideoContent | DocumentContent):
        mime = content.mime_type or "application/octet-stream"
        if content.data is not None:
            return wire.Part(inline_data=wire.Blob(mime_type=mime, data=content.data))
        if content.uri is not None:
            return wire.Part(file_data=wire.FileData(mime_type=mime, file_uri=content.uri))
    return None


def finish_reason(interaction: Ended) -> str | None:
    status = interaction.status
    if status in _LENGTH:
        return "MAX_TOKENS"
    if status == st.FAILED:
        return "SAFETY"
    if status in (st.IN_PROGRESS, st.QUEUED):
        return None
    return "STOP"


def failure(interaction: Ended) -> ErrorInfo | None:
    """What failed a failed interaction, unless it was a content block (finishReason SAFETY)."""
    if interaction.status != st.FAILED:
        return None
    error = (interaction.errors or [ErrorInfo(code="failed", message="The model call failed")])[0]
    return None if error.code == BLOCKED else error


#: how a failed turn's error is told (HTTP status, Google's status name), by our error code: what an upstream
#: answered keeps its meaning for the client's retries (the SDKs retry 429 and 5xx), anything else is a 502
_ERRORS = {
    "upstream_429": (429, "RESOURCE_EXHAUSTED"),
    "upstream_503": (503, "UNAVAILABLE"),
    "upstream_unavailable": (503, "UNAVAILABLE"),
    "unavailable": (503, "UNAVAILABLE"),
    "upstream_timeout": (504, "DEADLINE_EXCEEDED"),
}
_FAILED = (502, "UNAVAILABLE")


def error_status(code: str) -> tuple[int, str]:
    return _ERRORS.get(code, _FAILED)


def usage_metadata(counted: Usage | None) -> wire.UsageMetadata:
    counted = counted or Usage()
    prompt = (counted.total_input_tokens or 0) + (counted.total_tool_use_tokens or 0)
    output = counted.total_output_tokens or 0
    thoughts = counted.total_thought_tokens or 0
    return wire.UsageMetadata(
        prompt_token_count=prompt,
        candidates_token_count=output,
        thoughts_token_count=thoughts or None,
        cached_content_token_count=counted.total_cached_tokens or None,
        total_token_count=counted.total_tokens or prompt + output + thoughts,
    )
