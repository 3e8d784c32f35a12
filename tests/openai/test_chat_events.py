"""The Chat Completions stream's grammar (server/dialects/chat/events.py) fed Interactions frames as the
event log holds them (protocol/sse.py): pure, no server. The cases a model rarely gives the end-to-end
tests: several frames in one write, a keep-alive, a call without arguments, a content block, a failure."""

from __future__ import annotations

import json
from typing import Any

from server.dialects.chat.events import DONE, KEEPALIVE, ChunkStream
from server.protocol import sse
from server.protocol.deltas import TextDelta
from server.protocol.events import (
    ErrorEvent,
    Event,
    InteractionCompleted,
    InteractionCreated,
    InteractionStatusUpdate,
    StepDelta,
    StepStart,
    StepStop,
)
from server.protocol.interaction import ErrorInfo, Interaction, Usage
from server.protocol.steps import FunctionCallStep, ModelOutputStep

CREATED = "2026-06-01T12:00:00Z"


def shown(status: str, **fields: Any) -> Interaction:
    given = {"id": "v1_abc", **fields}
    return Interaction(object="interaction", status=status, model="echo", created=CREATED, **given)


def chunks_of(*events: Event, include_usage: bool = False) -> tuple[list[Any], list[bytes]]:
    """The chunks (decoded) and the raw writes, of all `events` framed and joined in one write."""
    stream = ChunkStream("chatcmpl-own", "asked", 0, include_usage=include_usage)
    written = stream.feed(b"".join(sse.frame(event) for event in events) + sse.KEEPALIVE)
    decoded = [json.loads(raw.removeprefix(b"data: ")) for raw in written if raw not in (DONE, KEEPALIVE)]
    return decoded, written


def test_a_call_without_arguments_gets_an_empty_object() -> None:
    chunks, written = chunks_of(
        InteractionCreated(interaction=shown("in_progress")),
        StepStart(index=0, step=FunctionCallStep(id="call_1", name="now", arguments={})),
        StepStop(index=0),
        InteractionStatusUpdate(interaction_id="v1_abc", status="requires_action"),
        InteractionCompleted(interaction=shown("requires_action")),
    )
    assert {chunk["id"] for chunk in chunks} == {"v1_abc"}, "a stored run's id, from interaction.created"
    assert {chunk["created"] for chunk in chunks} == {1780315200}
    role, call, arguments, finish = (chunk["choices"][0] for chunk in chunks)
    assert role["delta"] == {"role": "assistant", "content": "", "refusal": None}
    assert call["delta"]["tool_calls"] == [
        {"index": 0, "id": "call_1", "type": "function", "function": {"name": "now", "arguments": ""}}
    ]
    assert arguments["delta"]["tool_calls"] == [{"index": 0, "function": {"arguments": "{}"}}]
    assert finish == {"index": 0, "delta": {}, "finish_reason": "tool_calls", "logprobs": None}
    # the keep-alive after the end is not sent: the stream is over at [DONE]
    assert written[-1] == DONE


def test_text_and_usage_and_a_keepalive_between() -> None:
    stream = ChunkStream("chatcmpl-own", "asked", 7, include_usage=True)
    first = stream.feed(
        sse.frame(InteractionCreated(interaction=shown("in_progress", id=None)))
        + sse.frame(StepStart(index=0, step=ModelOutputStep()))
    )
    assert stream.feed(sse.KEEPALIVE) == [KEEPALIVE]
    usage = Usage(total_input_tokens=5, total_output_tokens=2, total_thought_tokens=3, total_tokens=10)
    rest = stream.feed(
        sse.frame(StepDelta(index=0, delta=TextDelta(text="Hi")))
        + sse.frame(InteractionCompleted(interaction=shown("completed", id=None, usage=usage)))
    )
    chunks = [json.loads(raw.removeprefix(b"data: ")) for raw in [*first, *rest] if raw != DONE]
    assert {chunk["id"] for chunk in chunks} == {"chatcmpl-own"}, "no stored id: the completion's own"
    assert chunks[1]["choices"][0]["delta"] == {"content": "Hi"}
    assert chunks[2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[3]["choices"] == []
    assert chunks[3]["usage"] == {
        "prompt_tokens": 5,
        "completion_tokens": 5,
        "total_tokens": 10,
        "completion_tokens_details": {"reasoning_tokens": 3},
        "prompt_tokens_details": {"cached_tokens": 0},
    }
    assert rest[-1] == DONE


def test_a_content_block_is_content_filter_and_a_failure_an_error() -> None:
    created = InteractionCreated(interaction=shown("in_progress"))
    blocked = ErrorEvent(error=ErrorInfo(code="content_blocked", message="blocked"))
    chunks, _ = chunks_of(created, blocked)
    assert chunks[-1]["choices"][0]["finish_reason"] == "content_filter"
    failed = ErrorEvent(error=ErrorInfo(code="failed", message="The model fell over"))
    chunks, written = chunks_of(created, failed)
    assert chunks[-1] == {
        "error": {"message": "The model fell over", "type": "server_error", "param": None, "code": "failed"}
    }
    assert written[-1] == DONE
