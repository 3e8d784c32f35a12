"""Cancel, in-process: the runtime on a real Redis, a scripted upstream the test holds open.

A cancelled run saves what it made until then (what its client saw), its upstream call is closed, and when
a cancel and the run's own end race, exactly one of them ends the interaction.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from server.errors import InvalidArgument
from server.protocol import lifecycle
from server.protocol import status as st
from server.runtime import Runtime

from ..waiting import until_async
from .harness import Frames, ScriptedBackend, parse, steps_text, stream_of

TENANT = "tenant-cancel"
STREAM = {"model": "scripted", "input": "hi", "stream": True}


async def logged_events(runtime: Runtime, interaction_id: str) -> list[dict[str, Any]]:
    frames = await runtime.store.log.frames(TENANT, interaction_id)
    return [event for frame in frames for event in parse(frame)]


def terminals(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["event_type"] in ("interaction.completed", "error")]


async def started(runtime: Runtime, scripted: ScriptedBackend, *words: str) -> tuple[Frames, str]:
    """A foreground stream whose upstream has sent `words` (and is held open), read by its client."""
    stream = await stream_of(runtime, TENANT, STREAM)
    call = await scripted.next_call()
    call.text(*words)
    await stream.until("step.delta", len(words))
    return stream, str(stream.events[0]["interaction"]["id"])


async def test_a_cancelled_foreground_stream_saves_what_its_client_saw(
    runtime: Runtime, scripted: ScriptedBackend
) -> None:
    stream, interaction_id = await started(runtime, scripted, "one ", "two ", "three ")
    call = scripted.calls[0]

    record = await runtime.control.cancel(TENANT, interaction_id)

    assert record.status == st.CANCELLED
    assert record.output is not None
    assert steps_text(record.output.steps) == "one two three " == stream.text()
    # the upstream call was closed, and nothing was read from it after the cancel
    await asyncio.wait_for(call.closed.wait(), 5)
    call.text("four ")
    assert call.taken == 4  # the step's start and three words
    events = await stream.rest()
    assert stream.ended
    assert events[-1]["event_type"] == "interaction.completed"
    assert events[-1]["interaction"]["status"] == st.CANCELLED
    assert stream.text() == "one two three "
    # the record and the log say the same
    assert (await runtime.control.get(TENANT, interaction_id)).status == st.CANCELLED
    assert [e["event_id"] for e in await logged_events(runtime, interaction_id)] == [
        e["event_id"] for e in events
    ]


async def test_a_second_cancel_waits_for_the_same_end(runtime: Runtime, scripted: ScriptedBackend) -> None:
    _stream, interaction_id = await started(runtime, scripted, "a ")
    first, second = await asyncio.gather(
        runtime.control.cancel(TENANT, interaction_id), runtime.control.cancel(TENANT, interaction_id)
    )
    assert first.status == second.status == st.CANCELLED
    assert first.output == second.output
    assert len(terminals(await logged_events(runtime, interaction_id))) == 1


async def test_a_cancel_that_lands_while_the_run_saves_its_end_wins(
    runtime: Runtime, scripted: ScriptedBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model has finished and the run is writing `completed` when a cancel (from any process) comes
    first: the run's write is refused, and the run saves its whole output as the cancelled one."""
    stream, interaction_id = await started(runtime, scripted, "all ", "of ", "it ")
    runs = runtime.store.runs
    write_end = runs.finish
    cancels: list[asyncio.Task[Any]] = []
    ends: list[lifecycle.Event] = []

    async def cancelling() -> bool:
        return await runtime.store.interactions.status(TENANT, interaction_id) == lifecycle.CANCELLING

    async def cancel_first(*args: Any, **kwargs: Any) -> Any:
        ends.append(kwargs["event"])
        if not cancels:
            cancels.append(asyncio.create_task(runtime.control.cancel(TENANT, interaction_id)))
            await until_async(cancelling, within=5, interval=0.005)
        return await write_end(*args, **kwargs)

    monkeypatch.setattr(runs, "finish", cancel_first)
    scripted.calls[0].finish()
    events = await stream.rest()
    cancelled = await asyncio.wait_for(cancels[0], 10)

    # the run tried to complete, was refused, and saved the cancel instead
    assert ends == [lifecycle.Event.COMPLETE, lifecycle.Event.SAVE_CANCELLED]
    assert cancelled.status == st.CANCELLED
    assert cancelled.output is not None and steps_text(cancelled.output.steps) == "all of it "
    logged = await logged_events(runtime, interaction_id)
    assert len(terminals(logged)) == 1 and terminals(logged)[0]["interaction"]["status"] == st.CANCELLED
    assert [e["status"] for e in logged if e["event_type"] == "interaction.status_update"][-1] == st.CANCELLED
    # the client saw one end: the cancelled one
    assert terminals(events) == terminals(logged)


async def test_a_cancel_after_the_run_completed_changes_nothing(
    runtime: Runtime, scripted: ScriptedBackend
) -> None:
    stream, interaction_id = await started(runtime, scripted, "done ")
    scripted.calls[0].finish()
    await stream.rest()
    before = await runtime.control.get(TENANT, interaction_id)
    with pytest.raises(InvalidArgument, match="is completed"):
        await runtime.control.cancel(TENANT, interaction_id)
    assert await runtime.control.get(TENANT, interaction_id) == before
    assert len(terminals(await logged_events(runtime, interaction_id))) == 1


async def test_racing_cancels_and_completions_each_have_one_winner(
    runtime: Runtime, scripted: ScriptedBackend
) -> None:
    """Whichever comes first, one end is stored, the log has one terminal event, and the record, the log
    and the cancel's answer agree on it."""
    outcomes = set()
    for attempt in range(12):
        stream, interaction_id = await started(runtime, scripted, f"n{attempt} ")
        call = scripted.calls[-1]
        # the cancel goes out a little before, with or after the model's end
        await asyncio.sleep((attempt % 4) * 0.002)
        cancel = asyncio.create_task(runtime.control.cancel(TENANT, interaction_id))
        call.finish()
        try:
            answered = (await cancel).status
        except InvalidArgument:
            answered = None
        await stream.rest()
        record = await runtime.control.get(TENANT, interaction_id)
        logged = await logged_events(runtime, interaction_id)
        [end] = terminals(logged)
        assert record.status == end["interaction"]["status"] == (answered or st.COMPLETED)
        assert terminals(stream.events) == [end]
        assert record.output is not None and steps_text(record.output.steps) == f"n{attempt} "
        outcomes.add(record.status)
    assert outcomes <= {st.CANCELLED, st.COMPLETED}
