"""An interaction as a `chat.completion`, and a stored completion's request messages.

The interaction's status as the choice's `finish_reason`:

    completed                       stop
    requires_action                 tool_calls (the function calls are the message's tool_calls)
    incomplete, budget_exceeded     length
    failed (content_blocked)        content_filter, with no content
    failed (anything else)          no completion: an error (a 502 reply, the stream's error chunk)
    cancelled                       stop, with what it made (a stored one cancelled through Google's API)
    in_progress                     null (a stored completion read while its stream still runs)

Usage: prompt_tokens are the input's (cached ones included, as OpenAI counts them) and the tool results';
completion_tokens the output's and the thoughts' (reasoning_tokens); total_tokens as the run counted them.
"""

from __future__ import annotations

import datetime
from typing import Any

from msgspec import UNSET

from ...protocol import status as st
from ...protocol.codec import convert, json_encoder
from ...protocol.content import TextContent
from ...protocol.interaction import ErrorInfo, Interaction, Usage
from ...protocol.steps import FunctionCallStep, ModelOutputStep, Step
from ..openai_labels import metadata_of
from . import objects as ob
from . import wire

BLOCKED = "content_blocked"
_LENGTH = frozenset({st.INCOMPLETE, "budget_exceeded"})


def completion(interaction: Interaction, completion_id: str, *, stored: bool = False) -> ob.ChatCompletion:
    """`completion_id`: the id a completion that was not stored is answered with (a stored one has its
    interaction's); `stored`: show its metadata, as OpenAI shows a stored completion's."""
    steps = interaction.steps or []
    calls = tool_calls(steps)
    status = interaction.status
    blocked = status == st.FAILED and failure(interaction) is None
    text = None if blocked else content_of(steps)
    message = ob.ChatCompletionMessage(content=text, tool_calls=calls or UNSET)
    choice = ob.Choice(message=message, finish_reason=finish_reason(status, bool(calls)))
    made = ob.ChatCompletion(
        id=interaction.id or completion_id,
        created=seconds(interaction.created),
        model=interaction.model or interaction.agent or "",
        choices=[choice],
        usage=usage(interaction.usage),
    )
    if stored:
        made.metadata = metadata_of(interaction.labels)[0]
    if interaction.warnings:
        made.warnings = list(interaction.warnings)
    return made


def content_of(steps: list[Step]) -> str | None:
    texts = [
        item.text
        for step in steps
        if isinstance(step, ModelOutputStep)
        for item in step.content
        if isinstance(item, TextContent)
    ]
    return "".join(texts) if texts else None


def tool_calls(steps: list[Step]) -> list[wire.ToolCall]:
    return [
        wire.ToolCall(id=step.id, function=wire.FunctionCall(name=step.name, arguments=arguments(step)))
        for step in steps
        if isinstance(step, FunctionCallStep)
    ]


def arguments(step: FunctionCallStep) -> str:
    return json_encoder.encode(step.arguments or {}).decode()


def finish_reason(status: str, called: bool) -> ob.FinishReason | None:
    if status == st.REQUIRES_ACTION or (called and status == st.COMPLETED):
        return "tool_calls"
    if status in _LENGTH:
        return "length"
    if status == st.FAILED:
        return "content_filter"
    if status in (st.IN_PROGRESS, st.QUEUED):
        return None
    return "stop"


def failure(interaction: Interaction) -> ErrorInfo | None:
    """What failed a failed interaction, unless it was a content block (a completion: content_filter)."""
    if interaction.status != st.FAILED:
        return None
    error = (interaction.errors or [ErrorInfo(code="failed", message="The completion failed")])[0]
    return None if error.code == BLOCKED else error


def usage(counted: Usage | None) -> ob.CompletionUsage:
    counted = counted or Usage()
    thoughts = counted.total_thought_tokens or 0
    prompt = (counted.total_input_tokens or 0) + (counted.total_tool_use_tokens or 0)
    made = (counted.total_output_tokens or 0) + thoughts
    return ob.CompletionUsage(
        prompt_tokens=prompt,
        completion_tokens=made,
        total_tokens=counted.total_tokens or prompt + made,
        completion_tokens_details=ob.CompletionTokensDetails(reasoning_tokens=thoughts),
        prompt_tokens_details=ob.PromptTokensDetails(cached_tokens=counted.total_cached_tokens or 0),
    )


def seconds(moment: str | None) -> int:
    """An interaction's time (RFC 3339) in seconds since the epoch, as OpenAI's `created`."""
    if not moment:
        return 0
    return int(datetime.datetime.fromisoformat(moment).timestamp())


# -- a stored completion's messages -----------------------------------------------------------------------


def store_messages(completion_id: str, sent: Any) -> list[ob.StoreMessage]:
    """The request's messages (StoredConfig.input: as the client sent them), each with a derived id."""
    messages = convert(sent or [], list[wire.Message])
    return [_store_message(f"{completion_id}-{index}", message) for index, message in enumerate(messages)]


def _store_message(message_id: str, message: wire.Message) -> ob.StoreMessage:
    content = message.content
    role = str(type(message).__struct_config__.tag)
    if isinstance(content, list):
        parts: list[wire.TextPart | wire.ImagePart] | None = [
            part for part in content if isinstance(part, wire.TextPart | wire.ImagePart)
        ]
        texts = [part.text for part in content if isinstance(part, wire.TextPart)]
        text = "".join(texts) if texts else None
    else:
        parts, text = None, content
    made = ob.StoreMessage(id=message_id, role=role, content=text, content_parts=parts)
    if isinstance(message, wire.AssistantMessage) and message.tool_calls:
        made.tool_calls = message.tool_calls
    if isinstance(message, wire.ToolMessage):
        made.tool_call_id = message.tool_call_id
    return made
