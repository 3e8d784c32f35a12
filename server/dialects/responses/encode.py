"""An interaction as the Responses API's Response object (wire.py), pure.

A response IS an interaction: the same record and id; its output is this turn's output steps, each a
Responses item with an id derived from the interaction's id and the step's index (never random: the same in
a create's reply, a get, a stream and its replay). Status mapping (the interaction's status as Google's
dialect shows it -> the Response's):

    queued (a background run no worker has taken)  -> queued (OpenAI's background create answers it)
    in_progress                                    -> in_progress
    completed                                      -> completed
    requires_action                                -> completed, with the `function_call` items to answer
    incomplete                                     -> incomplete, incomplete_details.reason
                                                      `max_output_tokens` (or the tool loop's limit code)
    budget_exceeded, requires_continuation         -> incomplete, the reason being that status
    failed                                         -> failed, with error {code, message}
    cancelled (and cancelling)                     -> cancelled

Items (output_item): model_output -> `message` (its text parts as `output_text`; media parts have no
Responses form and are left out), thought -> `reasoning` (summary, the signature as `encrypted_content`),
function_call -> `function_call` (arguments as JSON text), mcp_server_tool_call + its result ->
`mcp_call`. Google's built-in tools' steps have no Responses item and are not shown.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any, Final

import msgspec

from ...protocol import status as st
from ...protocol.content import Content, TextContent
from ...protocol.interaction import Interaction, InteractionConfig, Usage
from ...protocol.steps import (
    FunctionCallStep,
    McpServerToolCallStep,
    McpServerToolResultStep,
    ModelOutputStep,
    Step,
    ThoughtStep,
)
from ..openai_labels import metadata_of
from . import wire
from .settings import echoed_format, echoed_reasoning, echoed_tool_choice, echoed_tools

_json = msgspec.json.Encoder()

#: the Response's status for each status of an interaction (module docstring)
STATUSES: Final = {
    st.QUEUED: "queued",
    st.IN_PROGRESS: "in_progress",
    st.COMPLETED: "completed",
    st.REQUIRES_ACTION: "completed",
    st.INCOMPLETE: "incomplete",
    st.BUDGET_EXCEEDED: "incomplete",
    st.REQUIRES_CONTINUATION: "incomplete",
    st.FAILED: "failed",
    st.CANCELLED: "cancelled",
    "cancelling": "cancelled",
}

#: an item's status for each status of its interaction, its Response or itself
_ITEM_STATUSES: Final = {
    "queued": "in_progress",
    "in_progress": "in_progress",
    "completed": "completed",
    st.REQUIRES_ACTION: "completed",
}

#: what OpenAI's clients expect when the request did not say (OpenAI's documented defaults)
DEFAULT_TEMPERATURE: Final = 1.0
DEFAULT_TOP_P: Final = 1.0


def response_status(status: str) -> str:
    return STATUSES.get(status, status)


def item_status(status: str) -> str:
    """An item's status (`in_progress`, `completed` or `incomplete`) for the status of its interaction,
    its Response or the item itself: an unfinished one's items are in progress, a finished one's
    complete, unless it stopped short (incomplete, failed, cancelled)."""
    return _ITEM_STATUSES.get(status, "incomplete")


def seconds(stamp: str | None) -> int | None:
    """`2026-06-01T12:00:00Z` as Unix seconds (fromisoformat reads it in about 2 µs, strptime in 20-36)."""
    if not stamp:
        return None
    return int(datetime.fromisoformat(stamp).timestamp())


def created_at(interaction: Interaction) -> int:
    return seconds(interaction.created) or int(time.time())


def item_id(prefix: str, interaction_id: str, index: int | str) -> str:
    """`msg_<interaction id>_<step index>` and its kin: derived, so every rendering names an item alike."""
    return f"{prefix}_{interaction_id}_{index}"


def arguments_text(arguments: dict[str, Any] | None) -> str:
    return _json.encode(arguments or {}).decode()


def result_text(result: Any) -> str:
    """A tool's result as the text OpenAI's items carry: a string as it is, text parts joined, else JSON."""
    if isinstance(result, str):
        return result
    if isinstance(result, list) and all(isinstance(part, dict) and "text" in part for part in result):
        return "".join(str(part["text"]) for part in result)
    return _json.encode(result).decode()


def output_text_parts(content: list[Content]) -> list[wire.OutputText | wire.Refusal]:
    return [
        wire.OutputText(text=part.text, annotations=[]) for part in content if isinstance(part, TextContent)
    ]


def output_item(interaction_id: str, index: int, step: Step, status: str) -> wire.OutputItem | None:
    """The Responses item of the output step at `index`, with the item status of `status` (item_status),
    or None for a step with no item of its own (a tool result: output_items puts it in its call's item)."""
    shown = item_status(status)
    if isinstance(step, ModelOutputStep):
        return wire.OutputMessage(
            id=item_id("msg", interaction_id, index), status=shown, content=output_text_parts(step.content)
        )
    if isinstance(step, FunctionCallStep):
        return wire.FunctionCall(
            id=item_id("fc", interaction_id, index),
            call_id=step.id,
            name=step.name,
            arguments=arguments_text(step.arguments),
            status=shown,
        )
    if isinstance(step, ThoughtStep):
        return reasoning_item(item_id("rs", interaction_id, index), step, shown)
    if isinstance(step, McpServerToolCallStep):
        return wire.McpCall(
            id=item_id("mcp", interaction_id, index),
            server_label=step.server_name,
            name=step.name,
            arguments=arguments_text(step.arguments),
            status="in_progress" if shown == "in_progress" else "calling",
        )
    return None


def reasoning_item(identifier: str, step: ThoughtStep, status: str) -> wire.Reasoning:
    parts = step.summary if step.summary is not None else step.content
    summary = [wire.SummaryText(text=part.text) for part in parts or () if isinstance(part, TextContent)]
    return wire.Reasoning(id=identifier, summary=summary, encrypted_content=step.signature, status=status)


def output_items(interaction_id: str, steps: list[Step], status: str) -> list[wire.OutputItem]:
    """This turn's output steps as items: each finished but the last, whose status is that of the turn
    (item_status), and each MCP call with its result (its output, and its status completed)."""
    items: list[wire.OutputItem] = []
    calls: dict[str, wire.McpCall] = {}
    last = len(steps) - 1
    for index, step in enumerate(steps):
        if isinstance(step, McpServerToolResultStep):
            call = calls.get(step.call_id)
            if call is not None:
                call.output = result_text(step.result)
                call.status = "completed"
            continue
        item = output_item(interaction_id, index, step, status if index == last else st.COMPLETED)
        if isinstance(item, wire.McpCall) and isinstance(step, McpServerToolCallStep):
            calls[step.id] = item
        if item is not None:
            items.append(item)
    return items


def usage(usage: Usage | None) -> wire.Usage | None:
    """OpenAI counts thinking in the output tokens (`reasoning_tokens` says how many), Google apart."""
    if usage is None:
        return None
    thought = usage.total_thought_tokens or 0
    inputs = usage.total_input_tokens or 0
    outputs = (usage.total_output_tokens or 0) + thought
    return wire.Usage(
        input_tokens=inputs,
        input_tokens_details=wire.InputTokensDetails(cached_tokens=usage.total_cached_tokens or 0),
        output_tokens=outputs,
        output_tokens_details=wire.OutputTokensDetails(reasoning_tokens=thought),
        total_tokens=usage.total_tokens if usage.total_tokens is not None else inputs + outputs,
    )


def _ending(interaction: Interaction) -> tuple[wire.ResponseError | None, wire.IncompleteDetails | None]:
    """The Response's `error` (a failed one) and `incomplete_details` (one that stopped short)."""
    errors = interaction.errors or []
    status = interaction.status
    if status == st.FAILED:
        first = errors[0] if errors else None
        code = _ERROR_CODES.get(first.code, "server_error") if first else "server_error"
        return wire.ResponseError(code=code, message=first.message if first else "The response failed"), None
    if status == st.INCOMPLETE:
        reason = errors[0].code if errors else "max_output_tokens"
        return None, wire.IncompleteDetails(reason=reason)
    if status in (st.BUDGET_EXCEEDED, st.REQUIRES_CONTINUATION):
        return None, wire.IncompleteDetails(reason=status)
    return None, None


#: OpenAI's error codes for ours (its list is closed; what it has no name for is a server error)
_ERROR_CODES: Final = {
    "invalid_argument": "invalid_prompt",
    "content_blocked": "invalid_prompt",
    "upstream_429": "rate_limit_exceeded",
}


def response(interaction: Interaction, *, background: bool | None = None) -> wire.Response:
    """The interaction as a Response. `background`: whether it runs in the background (the interaction
    does not say; its record does)."""
    interaction_id = interaction.id or ""
    status = interaction.status
    gen = interaction.generation_config
    error, incomplete = _ending(interaction)
    metadata, user, safety_identifier = metadata_of(interaction.labels)
    finished = status not in (st.QUEUED, st.IN_PROGRESS)
    return wire.Response(
        id=interaction_id,
        object="response",
        created_at=created_at(interaction),
        completed_at=seconds(interaction.updated) if response_status(status) == "completed" else None,
        status=response_status(status),
        background=bool(background),
        error=error,
        incomplete_details=incomplete,
        instructions=interaction.system_instruction,
        max_output_tokens=gen.max_output_tokens if gen else None,
        max_tool_calls=None,
        model=interaction.model or interaction.agent or "",
        output=output_items(interaction_id, interaction.steps or [], status) if finished else [],
        parallel_tool_calls=True,
        previous_response_id=interaction.previous_interaction_id,
        reasoning=echoed_reasoning(gen),
        service_tier=interaction.service_tier or "default",
        store=interaction.id is not None,
        temperature=gen.temperature if gen and gen.temperature is not None else DEFAULT_TEMPERATURE,
        text=wire.TextConfig(format=echoed_format(interaction)),
        tool_choice=echoed_tool_choice(gen),
        tools=echoed_tools(interaction.tools),
        top_p=gen.top_p if gen and gen.top_p is not None else DEFAULT_TOP_P,
        truncation="disabled",
        usage=usage(interaction.usage),
        user=user,
        metadata=metadata,
        safety_identifier=safety_identifier,
        prompt_cache_key=None,
        presence_penalty=0.0,
        frequency_penalty=0.0,
        top_logprobs=0,
        warnings=interaction.warnings or None,
    )


def configured(snapshot: Interaction, config: InteractionConfig | None) -> Interaction:
    """A stream's start: the log's snapshot (id, model, created) with what the request configured."""
    if config is None:
        return snapshot
    fields = {name: getattr(config, name) for name in InteractionConfig.__struct_fields__}
    fields["previous_interaction_id"] = getattr(config, "previous_interaction_id", None)
    return msgspec.structs.replace(snapshot, **fields)


def bare(interaction_id: str) -> Interaction:
    """A stream's start when nothing says more than its id."""
    return Interaction(id=interaction_id or None, object="interaction", status=st.IN_PROGRESS)
