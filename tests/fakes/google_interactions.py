"""Scripts for a fake Google Interactions API (`POST /v1beta/interactions` with `stream: true`): the event
stream as Google's streaming docs and the official SDK's types have it (`event:` line, `event_type` and an
`event_id` in each payload, `interaction.completed` last, then `data: [DONE]`)."""

from __future__ import annotations

import json
from typing import Any, Unpack

from .http import Knobs, Script, sse

REMOTE_ID = "v1_remote_fake_1"
MODEL = "gemini-3-flash-preview"
USAGE = {"total_input_tokens": 5, "total_output_tokens": 7, "total_thought_tokens": 3, "total_tokens": 15}


def stream(events: list[dict[str, Any]], done: bool = True, first: int = 1, **knobs: Unpack[Knobs]) -> Script:
    """`events` numbered evt_<first>.. and framed; a stream from the start (`first` 1) begins with a created
    event unless the list does; one taken up after an event (`last_event_id`) goes on from there."""
    if first == 1 and (not events or events[0]["event_type"] != "interaction.created"):
        events = [created(), *events]
    chunks = [
        sse({**event, "event_id": f"evt_{n}"}, event["event_type"])
        for n, event in enumerate(events, start=first)
    ]
    if done:
        chunks.append(sse("[DONE]"))
    return Script(chunks=chunks, **knobs)


def interaction(status: str, steps: list[dict[str, Any]]) -> Script:
    """The remote interaction as `GET .../interactions/{id}` answers it (a poll)."""
    body = {"id": REMOTE_ID, "object": "interaction", "status": status, "steps": steps, "usage": USAGE}
    return Script(body=json.dumps(body).encode(), content_type="application/json")


def created(status: str = "in_progress") -> dict[str, Any]:
    interaction = {"id": REMOTE_ID, "status": status, "object": "interaction", "model": MODEL}
    return {"event_type": "interaction.created", "interaction": interaction}


def start(index: int, step: dict[str, Any]) -> dict[str, Any]:
    return {"event_type": "step.start", "index": index, "step": step}


def delta(index: int, value: dict[str, Any]) -> dict[str, Any]:
    return {"event_type": "step.delta", "index": index, "delta": value}


def stop(index: int) -> dict[str, Any]:
    return {"event_type": "step.stop", "index": index}


def completed(status: str = "completed", **extra: Any) -> dict[str, Any]:
    interaction = {"id": REMOTE_ID, "status": status, "object": "interaction", "usage": USAGE, **extra}
    return {"event_type": "interaction.completed", "interaction": interaction}


def text_events(text: str, index: int = 0) -> list[dict[str, Any]]:
    words = text.split(" ")
    pieces = [w if i == 0 else " " + w for i, w in enumerate(words)]
    return [
        start(index, {"type": "model_output"}),
        *(delta(index, {"type": "text", "text": p}) for p in pieces),
        stop(index),
    ]


def text_script(text: str = "Hello from Google", **knobs: Unpack[Knobs]) -> Script:
    return stream([*text_events(text), completed()], **knobs)


def thought_script(signature: str = "Z29vZ2xlLXNpZw==", text: str = "42") -> Script:
    return stream(
        [
            start(0, {"type": "thought"}),
            delta(0, {"type": "thought_summary", "content": {"type": "text", "text": "thinking"}}),
            delta(0, {"type": "thought_signature", "signature": signature}),
            stop(0),
            *text_events(text, 1),
            completed(),
        ]
    )


def search_script() -> Script:
    """A built-in tool's call and result as their own steps, then the answer with a citation."""
    call = {"type": "google_search_call", "id": "gs_1", "arguments": {"queries": ["weather paris"]}}
    result = {"type": "google_search_result", "call_id": "gs_1", "result": [{"url": "https://example.com"}]}
    return stream(
        [start(0, call), stop(0), start(1, result), stop(1), *text_events("Sunny in Paris", 2), completed()]
    )


def function_call_script(name: str = "get_weather", arguments: str = '{"city": "Paris"}') -> Script:
    return stream(
        [
            start(0, {"type": "function_call", "id": "call_g1", "name": name, "arguments": {}}),
            delta(0, {"type": "arguments_delta", "arguments": arguments}),
            stop(0),
            completed("requires_action"),
        ]
    )


def error_event_script(code: str, message: str) -> Script:
    return stream(
        [*text_events("partial"), {"event_type": "error", "error": {"code": code, "message": message}}],
        done=False,
    )
