"""What every Responses stream of the tests is checked against: each event against the Open Responses
models (`openresponses-types`' `*StreamingEvent`) and the openai SDK's own event union, and the stream as a
whole against its grammar's state machine (one `response.created` first, each item added before its
deltas and done after them, content and summary parts likewise, sequence numbers contiguous, `[DONE]`
last)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx
import pydantic
from openai.types.responses import ResponseStreamEvent
from openresponses_types import types as spec

from .checks import valid


#: the Open Responses model of each event type
def _models() -> dict[str, type[pydantic.BaseModel]]:
    models: dict[str, type[pydantic.BaseModel]] = {}
    for name in dir(spec):
        model = getattr(spec, name)
        if (
            name.endswith("StreamingEvent")
            and isinstance(model, type)
            and issubclass(model, pydantic.BaseModel)
        ):
            # each model's `type` is an enum of one member: the event's type
            kind: Any = model.model_fields["type"].annotation
            (member,) = list(kind)
            models[member.value] = model
    return models


MODELS = _models()
_SDK: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(ResponseStreamEvent)
TERMINAL = ("response.completed", "response.failed", "response.incomplete")
DONE = "[DONE]"


@dataclass
class Raw:
    """A stream as sent: its messages' `event:` names, their JSON payloads, and whether `[DONE]` ended it."""

    names: list[str] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    done: bool = False
    comments: int = 0


def parse(raw: bytes) -> Raw:
    """The SSE messages of a whole stream body."""
    stream = Raw()
    text = raw.decode()
    assert "\r" not in text
    for message in text.split("\n\n"):
        if not message:
            continue
        assert not stream.done, f"something after [DONE]: {message!r}"
        if message.startswith(":"):
            stream.comments += 1
            continue
        lines = message.split("\n")
        data = [line.removeprefix("data: ") for line in lines if line.startswith("data: ")]
        assert len(data) == 1, message
        if data[0] == DONE:
            assert len(lines) == 1, message
            stream.done = True
            continue
        assert lines[0].startswith("event: "), message
        stream.names.append(lines[0].removeprefix("event: "))
        stream.events.append(json.loads(data[0]))
    return stream


def post_stream(base_url: str, api_key: str, body: dict[str, Any]) -> Raw:
    """A `POST /v1/responses` with `stream: true`, read whole."""
    with httpx.Client(base_url=base_url, headers={"authorization": f"Bearer {api_key}"}, timeout=30) as http:
        response = http.post("/v1/responses", json={**body, "stream": True})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return checked(response.content)


def get_stream(base_url: str, api_key: str, response_id: str, **params: Any) -> Raw:
    """`GET /v1/responses/{id}?stream=true`, read whole."""
    with httpx.Client(base_url=base_url, headers={"authorization": f"Bearer {api_key}"}, timeout=30) as http:
        response = http.get(f"/v1/responses/{response_id}", params={"stream": "true", **params})
    assert response.status_code == 200, response.text
    return parse(response.content)


def checked(raw: bytes) -> Raw:
    """A whole stream, its events validated and its grammar checked from its start."""
    stream = parse(raw)
    for name, event in zip(stream.names, stream.events, strict=True):
        validate(name, event)
    Grammar().check(stream)
    return stream


def validate(name: str, event: dict[str, Any]) -> None:
    assert name == event["type"], (name, event)
    model = MODELS[event["type"]]
    if "response" in event:
        valid(json.dumps(event["response"]))
        event = {**event, "response": _without_schema(event["response"])}
    model.model_validate(event)
    _SDK.validate_python(event)


def _without_schema(response: dict[str, Any]) -> dict[str, Any]:
    """As checks.valid: the Open Responses model types a json_schema format's schema as null only."""
    fmt = response.get("text", {}).get("format", {})
    if fmt.get("type") != "json_schema":
        return response
    return {**response, "text": {**response["text"], "format": {**fmt, "schema": None}}}


def text_of(stream: Raw) -> str:
    return "".join(e["delta"] for e in stream.events if e["type"] == "response.output_text.delta")


@dataclass
class Grammar:
    """The state machine of one stream, from its start."""

    items: dict[str, dict[str, Any]] = field(default_factory=dict)
    done_items: list[dict[str, Any]] = field(default_factory=list)
    parts: dict[tuple[str, int], list[str]] = field(default_factory=dict)
    closed_parts: set[tuple[str, int]] = field(default_factory=set)
    arguments: dict[str, list[str]] = field(default_factory=dict)

    def check(self, stream: Raw) -> None:
        events = stream.events
        assert stream.done, "no [DONE] at the end"
        assert events and events[0]["type"] == "response.created", events[:1]
        assert [e["type"] for e in events].count("response.created") == 1
        assert [e["sequence_number"] for e in events] == list(range(len(events)))
        assert events[-1]["type"] in TERMINAL, events[-1]["type"]
        assert all(e["type"] not in TERMINAL for e in events[:-1])
        ids = {e["response"]["id"] for e in events if "response" in e}
        assert len(ids) == 1, ids
        for event in events[1:]:
            self.step(event)
        assert not [key for key in self.parts if key not in self.closed_parts], "a part never done"
        assert len(self.done_items) == len(self.items), "an item never done"
        final = events[-1]["response"]
        if final["status"] == "completed":
            assert [item["id"] for item in final["output"]] == [item["id"] for item in self.done_items]

    def step(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "response.output_item.added":
            item = event["item"]
            assert item["id"] not in self.items, "an item added twice"
            assert event["output_index"] == len(self.items), "output indexes in order"
            assert item.get("status") in ("in_progress", None), item
            self.items[item["id"]] = event
            self.arguments[item["id"]] = []
        elif kind == "response.output_item.done":
            item = event["item"]
            added = self.items[item["id"]]
            assert added["output_index"] == event["output_index"]
            assert item["id"] not in [done["id"] for done in self.done_items], "an item done twice"
            assert not [key for key in self.parts if key[0] == item["id"] and key not in self.closed_parts]
            assert item.get("status") in ("completed", "incomplete", "calling", None), item
            self.done_items.append(item)
            self._check_item(item)
        elif "item_id" in event:
            self._in_item(event)

    def _in_item(self, event: dict[str, Any]) -> None:
        kind, item_id = event["type"], event["item_id"]
        assert item_id in self.items, f"{kind} before its item was added"
        assert item_id not in [done["id"] for done in self.done_items], f"{kind} after its item was done"
        assert self.items[item_id]["output_index"] == event["output_index"]
        index = event.get("content_index", event.get("summary_index"))
        key = (item_id, index if isinstance(index, int) else -1)
        if kind in ("response.content_part.added", "response.reasoning_summary_part.added"):
            assert key not in self.parts, "a part added twice"
            assert index == len([k for k in self.parts if k[0] == item_id]), "parts in order"
            self.parts[key] = []
        elif kind in ("response.output_text.delta", "response.reasoning_summary_text.delta"):
            assert key in self.parts and key not in self.closed_parts, f"{kind} outside its part"
            self.parts[key].append(event["delta"])
        elif kind in ("response.output_text.done", "response.reasoning_summary_text.done"):
            assert "".join(self.parts[key]) == event["text"], "deltas concatenate to the text"
        elif kind in ("response.content_part.done", "response.reasoning_summary_part.done"):
            assert "".join(self.parts[key]) == event["part"]["text"]
            self.closed_parts.add(key)
        elif kind == "response.function_call_arguments.delta":
            self.arguments[item_id].append(event["delta"])
        elif kind == "response.function_call_arguments.done":
            assert "".join(self.arguments[item_id]) == event["arguments"], "deltas concatenate"

    def _check_item(self, item: dict[str, Any]) -> None:
        if item["type"] == "message":
            texts = [part["text"] for part in item["content"] if part["type"] == "output_text"]
            streamed = ["".join(v) for k, v in sorted(self.parts.items()) if k[0] == item["id"]]
            assert texts == streamed, (texts, streamed)
        elif item["type"] == "function_call":
            assert json.loads("".join(self.arguments[item["id"]])) == json.loads(item["arguments"])
