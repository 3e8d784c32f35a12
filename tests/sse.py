"""Reading an SSE response in the tests, event by event, as a client sees it; and our frames as an event
log holds them, for the dialects' grammars alone."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx

from server.protocol import sse
from server.protocol.events import Event


def events(response: httpx.Response) -> Iterator[dict[str, Any]]:
    """The JSON payloads of the `data:` lines, in order (keep-alive comments skipped)."""
    buffer = ""
    for chunk in response.iter_text():
        buffer += chunk
        while "\n\n" in buffer:
            message, buffer = buffer.split("\n\n", 1)
            data = [line[5:].lstrip() for line in message.split("\n") if line.startswith("data:")]
            if data:
                yield json.loads("\n".join(data))


def text_of(stream: list[dict[str, Any]]) -> str:
    return "".join(
        e["delta"].get("text", "")
        for e in stream
        if e["event_type"] == "step.delta" and e["delta"]["type"] == "text"
    )


def logged(*events: Event) -> bytes:
    """The frames of `events` as the log holds them: numbered from 1 (`evt_<n>`) in order."""
    out = []
    for seq, event in enumerate(events, start=1):
        event.event_id = sse.event_id(seq)
        out.append(sse.frame(event))
    return b"".join(out)
