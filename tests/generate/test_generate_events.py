"""streamGenerateContent's grammar alone (dialects/generate/events.py), fed our frames as a log holds them:
a text delta's chunk made from the frame's bytes is byte for byte the Struct's, a thought's signature rides
on the next part, a call streams whole at its step's end, a failure ends the stream with Google's error.
Pure: no server."""

from __future__ import annotations

import json

import msgspec

from server.dialects.generate import encode, wire
from server.dialects.generate.events import Chunks
from server.protocol.codec import json_encoder
from server.protocol.content import TextContent
from server.protocol.deltas import ArgumentsDelta, TextDelta, ThoughtSignatureDelta, ThoughtSummaryDelta
from server.protocol.events import (
    ErrorEvent,
    InteractionCompleted,
    InteractionCreated,
    StepDelta,
    StepStart,
    StepStop,
)
from server.protocol.interaction import ErrorInfo, Interaction, Usage
from server.protocol.steps import FunctionCallStep, GoogleSearchCallStep, ModelOutputStep, ThoughtStep

from ..sse import logged


def _turn(status: str = "completed") -> Interaction:
    usage = Usage(total_input_tokens=2, total_output_tokens=3, total_tokens=5)
    return Interaction(id="x", object="interaction", status=status, model="echo", usage=usage)


def test_a_text_chunk_from_the_frames_bytes_is_the_structs() -> None:
    words = ["plain ", 'quo"ted ', "new\nline ", "ünïcode ", "\u2028sep", ""]
    for model in ("echo", ""):
        chunks = Chunks("resp1", model)
        log = logged(
            StepStart(index=0, step=ModelOutputStep()),
            *(StepDelta(index=0, delta=TextDelta(text=w)) for w in words),
        )
        made = chunks.feed(log)
        assert len(made) == len(words) - 1  # an empty text makes no chunk
        for got, word in zip(made, words, strict=False):
            part = wire.Part(text=word)
            candidate = wire.Candidate(content=wire.Content(role="model", parts=[part]), index=0)
            expected = wire.GenerateContentResponse(
                candidates=[candidate], model_version=model or None, response_id="resp1"
            )
            assert got == json_encoder.encode(expected)


def test_a_thought_a_call_and_the_end() -> None:
    chunks = Chunks("r", "echo")
    log = logged(
        InteractionCreated(interaction=_turn("in_progress")),
        StepStart(index=0, step=ThoughtStep()),
        StepDelta(index=0, delta=ThoughtSummaryDelta(content=TextContent(text="Hmm."))),
        StepDelta(index=0, delta=ThoughtSignatureDelta(signature="sig1")),
        StepStop(index=0),
        StepStart(index=1, step=FunctionCallStep(id="c1", name="f", arguments={})),
        StepDelta(index=1, delta=ArgumentsDelta(arguments='{"a": ')),
        StepDelta(index=1, delta=ArgumentsDelta(arguments="1}")),
        StepStop(index=1),
        StepStart(index=2, step=ModelOutputStep()),
        StepDelta(index=2, delta=TextDelta(text="done")),
        StepStop(index=2),
        InteractionCompleted(interaction=_turn()),
    )
    made = [json.loads(chunk) for chunk in chunks.feed(log)]
    parts = [chunk["candidates"][0].get("content", {}).get("parts", []) for chunk in made]
    assert parts[0] == [{"text": "Hmm.", "thought": True}]
    # the signature rides on the next part: the call's
    assert parts[1] == [{"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "sig1"}]
    assert parts[2] == [{"text": "done"}]
    last = made[-1]
    assert last["candidates"][0]["finishReason"] == "STOP"
    assert last["usageMetadata"] == {"promptTokenCount": 2, "candidatesTokenCount": 3, "totalTokenCount": 5}
    assert chunks.ended and chunks.feed(logged(StepDelta(index=2, delta=TextDelta(text="late")))) == []


def test_a_failure_ends_the_stream_with_googles_error() -> None:
    chunks = Chunks("r", "echo")
    log = logged(ErrorEvent(error=ErrorInfo(code="upstream_429", message="Slow down")))
    [error] = [json.loads(chunk) for chunk in chunks.feed(log)]
    assert error == {"error": {"code": 429, "message": "Slow down", "status": "RESOURCE_EXHAUSTED"}}


def test_frames_read_in_part_say_what_the_whole_event_says() -> None:
    """A step's start is read for its type and content, the end for its status, usage and errors: a model
    output that starts with content streams it, a start of another step says nothing, and the end of a
    failed, a blocked and a cut turn each says so."""
    chunks = Chunks("r", "echo")
    log = logged(
        StepStart(index=0, step=GoogleSearchCallStep(id="g1", arguments={"queries": ["q"]})),
        StepStart(index=1, step=ModelOutputStep(content=[TextContent(text="at once")])),
        StepStart(index=2, step=ModelOutputStep()),
    )
    assert [json.loads(chunk)["candidates"][0]["content"]["parts"] for chunk in chunks.feed(log)] == [
        [{"text": "at once"}]
    ]
    failed = Interaction(
        object="interaction",
        status="failed",
        model="echo",
        steps=[ModelOutputStep(content=[TextContent(text="never read")])],
        errors=[ErrorInfo(code="upstream_503", message="Away")],
    )
    blocked = msgspec.structs.replace(failed, errors=[ErrorInfo(code="content_blocked", message="No")])
    ends = {
        "failed": (failed, {"error": {"code": 503, "message": "Away", "status": "UNAVAILABLE"}}),
        "blocked": (blocked, "SAFETY"),
        "cut": (_turn("incomplete"), "MAX_TOKENS"),
    }
    for name, (turn, expected) in ends.items():
        chunks = Chunks("r", "echo")
        [last] = [json.loads(chunk) for chunk in chunks.feed(logged(InteractionCompleted(interaction=turn)))]
        assert chunks.ended, name
        if isinstance(expected, dict):
            assert last == expected, name
        else:
            assert last["candidates"][0] == {"finishReason": expected, "index": 0}, name
            assert last["usageMetadata"]["totalTokenCount"] == (5 if name == "cut" else 0), name


def test_the_last_chunk_framed_at_once_is_the_structs() -> None:
    usages = [
        None,
        Usage(total_input_tokens=2, total_output_tokens=3, total_tokens=5),
        Usage(total_input_tokens=7, total_output_tokens=1, total_thought_tokens=4, total_cached_tokens=2),
    ]
    for model in ("echo", ""):
        for status, reason in (
            ("completed", "STOP"),
            ("incomplete", "MAX_TOKENS"),
            ("requires_action", "STOP"),
        ):
            for usage in usages:
                turn = Interaction(id="x", object="interaction", status=status, model="echo", usage=usage)
                [got] = Chunks("resp1", model).feed(logged(InteractionCompleted(interaction=turn)))
                candidate = wire.Candidate(finish_reason=reason, index=0)
                expected = wire.GenerateContentResponse(
                    candidates=[candidate],
                    usage_metadata=encode.usage_metadata(usage),
                    model_version=model or None,
                    response_id="resp1",
                )
                assert got == json_encoder.encode(expected)
