"""The runner over real HTTP, in the test's own process and loop (tests/inproc.py: InProcess): the official
SDK's async client and plain httpx against the app on 127.0.0.1, with a scripted upstream the test holds
open. Nothing between them buffers: an event reaches the client while the upstream call is still open, a
cancel from another connection stops the run, and a client that hangs up is a closed connection."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.genai._interactions import AsyncStream
from google.genai.interactions import InteractionCompletedEvent, InteractionSSEEvent

from server.protocol import status as st

from ..inproc import InProcess, serving
from ..replies import output_text_of, streamed_text
from ..support import new_key, sdk
from .harness import ScriptedBackend

BODY = {"model": "scripted", "input": "hi", "stream": True}


@pytest.fixture
async def app(tmp_path: Path, scripted: ScriptedBackend) -> AsyncIterator[InProcess]:
    async with serving(tmp_path, backends={scripted.name: scripted}) as served:
        yield served


async def events_until(
    stream: AsyncIterator[InteractionSSEEvent], seen: list[InteractionSSEEvent], event_type: str
) -> None:
    async with asyncio.timeout(10):
        async for event in stream:
            seen.append(event)
            if event.event_type == event_type:
                return
    raise AssertionError(f"the stream ended before a {event_type}")


async def test_the_sdk_gets_each_event_while_the_upstream_is_still_open(
    app: InProcess, scripted: ScriptedBackend
) -> None:
    client = sdk(app.url, new_key())
    stream = await client.aio.interactions.create(model="scripted", input="hi", stream=True)
    assert isinstance(stream, AsyncStream), stream
    events: AsyncIterator[InteractionSSEEvent] = aiter(stream)
    seen: list[InteractionSSEEvent] = []
    call = await scripted.next_call()
    call.text("one ")
    await events_until(events, seen, "step.delta")
    # the word arrived, and the upstream has not answered more: nothing waits for the end to send it
    assert streamed_text(seen) == "one " and not call.closed.is_set()
    call.text("two")
    call.finish()
    await events_until(events, seen, "interaction.completed")
    assert streamed_text(seen) == "one two"
    completed = seen[-1]
    assert isinstance(completed, InteractionCompletedEvent)
    assert completed.interaction.id
    got = await client.aio.interactions.get(completed.interaction.id)
    assert got.status == st.COMPLETED and output_text_of(got) == "one two"


async def test_a_cancel_from_another_connection_stops_the_stream_and_keeps_its_output(
    app: InProcess, scripted: ScriptedBackend
) -> None:
    key = new_key()
    async with (
        httpx.AsyncClient(base_url=app.url, headers={"x-goog-api-key": key}, timeout=10) as http,
        http.stream("POST", "/v1beta/interactions", json=BODY) as response,
    ):
        assert response.status_code == 200
        frames = response.aiter_lines()
        call = await scripted.next_call()
        call.text("partial ", "answer")
        seen = await read_events(frames, until=lambda e: e["event_type"] == "step.delta", count=2)
        interaction_id = seen[0]["interaction"]["id"]

        cancelled = await sdk(app.url, key).aio.interactions.cancel(interaction_id)

        assert cancelled.status == st.CANCELLED and cancelled.output_text == "partial answer"
        await asyncio.wait_for(call.closed.wait(), 5)  # the upstream call was closed
        rest = await read_events(frames, until=lambda e: e["event_type"] == "interaction.completed")
    assert rest[-1]["interaction"]["status"] == st.CANCELLED
    assert call.taken == 3  # the step's start and two words: nothing was read after the cancel


async def test_a_client_that_hangs_up_stops_its_run(app: InProcess, scripted: ScriptedBackend) -> None:
    """`on_stream_disconnect = "cancel"` (the default): the run stops and keeps what its client saw."""
    key = new_key()
    async with httpx.AsyncClient(base_url=app.url, headers={"x-goog-api-key": key}, timeout=10) as http:
        async with http.stream("POST", "/v1beta/interactions", json=BODY) as response:
            frames = response.aiter_lines()
            call = await scripted.next_call()
            call.text("seen ")
            seen = await read_events(frames, until=lambda e: e["event_type"] == "step.delta")
            interaction_id = seen[0]["interaction"]["id"]
        # the connection is closed: the server notices and stops the run, which closes its upstream call
        await asyncio.wait_for(call.closed.wait(), 5)

        async def settled() -> dict[str, Any]:
            while True:
                got: dict[str, Any] = (await http.get(f"/v1beta/interactions/{interaction_id}")).json()
                if got["status"] not in (st.QUEUED, st.IN_PROGRESS):
                    return got
                await asyncio.sleep(0.02)

        record = await asyncio.wait_for(settled(), 5)
    assert record["status"] == st.CANCELLED
    assert [s["type"] for s in record["steps"]] == ["user_input", "model_output"]
    assert record["steps"][1]["content"][0]["text"] == "seen "


async def read_events(
    lines: AsyncIterator[str], *, until: Any, count: int = 1, within: float = 10
) -> list[dict[str, Any]]:
    """The events of an SSE body, read until `count` of them matched `until`."""
    events: list[dict[str, Any]] = []
    matched = 0
    async with asyncio.timeout(within):
        async for line in lines:
            if not line.startswith("data: "):
                continue
            event: dict[str, Any] = json.loads(line[len("data: ") :])
            events.append(event)
            matched += bool(until(event))
            if matched == count:
                return events
    raise AssertionError(f"the stream ended after {events}")
