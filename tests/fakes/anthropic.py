"""Scripts for a fake Anthropic `/v1/messages` stream: named events whose name equals `data.type`."""

from __future__ import annotations

from typing import Any, Unpack

from .http import Knobs, Script, json_error, sse


def event(data: dict[str, Any]) -> bytes:
    return sse(data, event=data["type"])


def message_start(input_tokens: int = 12, cache_read: int = 0, cache_write: int = 0) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "claude-fake",
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "cache_read_input_tokens": cache_read,
                "cache_creation_input_tokens": cache_write,
                "output_tokens": 1,
            },
        },
    }


def block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def block_delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def block_stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def message_end(stop_reason: str = "end_turn", output_tokens: int = 5) -> list[dict[str, Any]]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
        {"type": "message_stop"},
    ]


def text_block(index: int, text: str) -> list[dict[str, Any]]:
    words = text.split(" ")
    pieces = [w if i == 0 else " " + w for i, w in enumerate(words)]
    return [
        block_start(index, {"type": "text", "text": ""}),
        *(block_delta(index, {"type": "text_delta", "text": p}) for p in pieces),
        block_stop(index),
    ]


def script(events: list[dict[str, Any]], **knobs: Unpack[Knobs]) -> Script:
    return Script(chunks=[event(e) for e in events], **knobs)


def anthropic_text_script(
    text: str = "Hello world", stop_reason: str = "end_turn", **knobs: Unpack[Knobs]
) -> Script:
    events = [message_start(), {"type": "ping"}, *text_block(0, text), *message_end(stop_reason)]
    return script(events, **knobs)


def anthropic_thinking_script(
    thinking: str = "Let me think.",
    signature: str = "EqQBCkYIARgCKkBanthropic",
    text: str = "42",
    **knobs: Unpack[Knobs],
) -> Script:
    events = [
        message_start(),
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        block_delta(0, {"type": "thinking_delta", "thinking": thinking}),
        block_delta(0, {"type": "signature_delta", "signature": signature}),
        block_stop(0),
        block_start(1, {"type": "redacted_thinking", "data": "cmVkYWN0ZWQ="}),
        block_stop(1),
        *text_block(2, text),
        *message_end(),
    ]
    return script(events, **knobs)


def anthropic_tool_use_script(
    name: str = "get_weather",
    fragments: tuple[str, ...] = ('{"city"', ': "Paris"}'),
    call_id: str = "toolu_01abc",
    **knobs: Unpack[Knobs],
) -> Script:
    events = [
        message_start(input_tokens=20, cache_read=100, cache_write=50),
        *text_block(0, "Checking."),
        block_start(1, {"type": "tool_use", "id": call_id, "name": name, "input": {}}),
        block_delta(1, {"type": "input_json_delta", "partial_json": ""}),
        *(block_delta(1, {"type": "input_json_delta", "partial_json": f}) for f in fragments),
        block_stop(1),
        *message_end("tool_use", output_tokens=30),
    ]
    return script(events, **knobs)


def anthropic_error_event_script(
    kind: str = "overloaded_error", message: str = "Overloaded", **knobs: Unpack[Knobs]
) -> Script:
    events = [
        message_start(),
        block_start(0, {"type": "text", "text": ""}),
        block_delta(0, {"type": "text_delta", "text": "Hel"}),
        {"type": "error", "error": {"type": kind, "message": message}},
    ]
    return script(events, **knobs)


def anthropic_error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> Script:
    return json_error(status, {"type": "error", "error": {"type": kind, "message": message}}, headers)
