"""The event-log reader (server/events/log.py) in-process: a stream resumes after `last_event_id`, live or
finished, and once the log is gone the stream is rebuilt from the record, numbered apart (evr_) so a
resume never mixes the two."""

from __future__ import annotations

from typing import Any

import pytest

from server.errors import InvalidArgument
from server.protocol import status as st
from server.runtime import Runtime
from server.store import keys

from ..runner.harness import Frames, ScriptedBackend, stream_of, text_of

TENANT = "tenant-events"
STREAM = {"model": "scripted", "input": "hi", "stream": True}


async def reader(runtime: Runtime, interaction_id: str, last_event_id: str | None = None) -> Frames:
    replay = await runtime.events.prepare(TENANT, interaction_id, last_event_id)
    return Frames(runtime.events.frames(replay))


async def finished(
    runtime: Runtime, scripted: ScriptedBackend, *words: str
) -> tuple[str, list[dict[str, Any]]]:
    """A streamed interaction that answered `words`: its id and the events its client got."""
    stream = await stream_of(runtime, TENANT, STREAM)
    call = await scripted.next_call()
    call.text(*words)
    call.finish()
    events = await stream.rest()
    return str(events[0]["interaction"]["id"]), events


async def test_a_resume_gets_the_events_after_the_last_one_seen(
    runtime: Runtime, scripted: ScriptedBackend
) -> None:
    interaction_id, events = await finished(runtime, scripted, "a ", "b ", "c ")
    ids = [e["event_id"] for e in events]
    assert ids == [f"evt_{n}" for n in range(1, len(events) + 1)]
    for seen in (1, 3, len(events) - 1):
        resumed = await (await reader(runtime, interaction_id, f"evt_{seen}")).rest()
        assert resumed == events[seen:]


async def test_a_resume_after_the_last_event_ends_at_once(
    runtime: Runtime, scripted: ScriptedBackend
) -> None:
    """A client cut off just after the terminal event reconnects with its id: nothing more will come."""
    interaction_id, events = await finished(runtime, scripted, "a ")
    resumed = await reader(runtime, interaction_id, events[-1]["event_id"])
    try:
        # the keep-alive interval is 2 s here: a stream that ends at once ends before the first one
        assert await resumed.rest(within=1.0) == []
    finally:
        await resumed.close()


async def test_a_follower_resumes_a_running_interaction_and_sees_it_end(
    runtime: Runtime, scripted: ScriptedBackend
) -> None:
    stream = await stream_of(runtime, TENANT, STREAM)
    call = await scripted.next_call()
    call.text("one ", "two ")
    await stream.until("step.delta", 2)
    interaction_id = str(stream.events[0]["interaction"]["id"])
    before = list(stream.events)
    seen = before[-1]["event_id"]

    follower = await reader(runtime, interaction_id, seen)
    call.text("three ")
    await follower.until("step.delta", 1)
    assert follower.text() == "three "
    call.finish()
    events = await follower.rest()
    assert events[-1]["event_type"] == "interaction.completed"
    # together, what the client saw before and what the follower got after are the whole stream
    assert before + events == await stream.rest()


async def test_once_the_log_is_gone_the_stream_is_rebuilt_from_the_record(
    runtime: Runtime, scripted: ScriptedBackend
) -> None:
    interaction_id, logged = await finished(runtime, scripted, "kept ", "in ", "the ", "record")
    await runtime.store.redis.delete(keys.events(TENANT, interaction_id))  # as if it had expired

    rebuilt = await (await reader(runtime, interaction_id)).rest()

    assert [e["event_id"] for e in rebuilt] == [f"evr_{n}" for n in range(1, len(rebuilt) + 1)]
    assert text_of(rebuilt) == text_of(logged) == "kept in the record"
    assert rebuilt[0]["event_type"] == "interaction.created"
    assert rebuilt[-1]["event_type"] == "interaction.completed"
    assert rebuilt[-1]["interaction"]["status"] == st.COMPLETED
    assert rebuilt[-1]["interaction"]["id"] == interaction_id
    # resumable in its own numbering
    assert await (await reader(runtime, interaction_id, "evr_2")).rest() == rebuilt[2:]
    # but not in the log's, which is gone
    with pytest.raises(InvalidArgument, match="expired"):
        await runtime.events.prepare(TENANT, interaction_id, "evt_2")


@pytest.mark.parametrize("last_event_id", ["evt_99", "evr_1"])
async def test_an_event_id_the_log_does_not_hold_is_refused(
    runtime: Runtime, scripted: ScriptedBackend, last_event_id: str
) -> None:
    interaction_id, _events = await finished(runtime, scripted, "x")
    with pytest.raises(InvalidArgument, match="last_event_id"):
        await runtime.events.prepare(TENANT, interaction_id, last_event_id)
