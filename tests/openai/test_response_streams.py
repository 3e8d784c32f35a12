"""Responses streams through the official openai SDK and as sent, on the shared server (the app in this
process): `create(stream=True)`, `client.responses.stream(...)`, a function call, a background response;
every event validated (stream_checks.py) and the grammar's state machine checked."""

from __future__ import annotations

import json

import pytest
from openai import OpenAI
from openai.types.responses import (
    ResponseCompletedEvent,
    ResponseCreatedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseTextDeltaEvent,
)

from .. import js_sdk
from .stream_checks import Grammar, Raw, get_stream, post_stream, text_of

SENTENCE = "Count to three please"
LOOKUP = {
    "type": "function",
    "name": "lookup",
    "description": "Look a word up",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
}


def test_create_stream_with_the_sdk(oai: OpenAI) -> None:
    events = list(oai.responses.create(model="echo", input=SENTENCE, stream=True))
    assert isinstance(events[0], ResponseCreatedEvent)
    assert events[0].response.status == "in_progress"
    kinds = [event.type for event in events]
    assert kinds[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    deltas = [event for event in events if isinstance(event, ResponseTextDeltaEvent)]
    assert len(deltas) == 4
    assert "".join(delta.delta for delta in deltas) == SENTENCE
    last = events[-1]
    assert isinstance(last, ResponseCompletedEvent)
    assert last.response.output_text == SENTENCE
    assert last.response.id == events[0].response.id
    assert {delta.item_id for delta in deltas} == {last.response.output[0].id}
    assert last.response.usage is not None and last.response.usage.output_tokens == 4
    assert [event.sequence_number for event in events] == list(range(len(events)))
    # the stream is the stored response's: a get shows the same turn, its item under the same id
    got = oai.responses.retrieve(last.response.id)
    assert got.output_text == SENTENCE and got.output[0].id == last.response.output[0].id


def test_the_sdks_stream_helper_accumulates_the_answer(oai: OpenAI) -> None:
    snapshots: list[str] = []
    with oai.responses.stream(model="echo", input=SENTENCE, instructions="Be terse.") as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                snapshots.append(event.snapshot)
        final = stream.get_final_response()
    assert snapshots[-1] == SENTENCE and snapshots[0] == "Count "
    assert final.output_text == SENTENCE
    assert final.instructions == "Be terse."
    assert final.status == "completed"


def test_a_function_call_streams_its_arguments(oai: OpenAI) -> None:
    with oai.responses.stream(model="echo", input="find it", tools=[LOOKUP]) as stream:  # type: ignore[list-item]
        events = list(stream)
        final = stream.get_final_response()
    deltas = [event for event in events if isinstance(event, ResponseFunctionCallArgumentsDeltaEvent)]
    assert deltas and json.loads(deltas[-1].snapshot) == {"q": "find it"}
    call = final.output[0]
    assert call.type == "function_call" and call.name == "lookup" and call.status == "completed"
    assert json.loads(call.arguments) == {"q": "find it"}
    # requires_action is a completed Response with the calls to answer
    assert final.status == "completed"
    # answered in the next turn, chained by previous_response_id
    answer = oai.responses.create(
        model="echo",
        previous_response_id=final.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "a word"}],
        stream=True,
    )
    text = "".join(event.delta for event in answer if isinstance(event, ResponseTextDeltaEvent))
    assert text == "find it [lookup: a word]"


def test_a_background_response_streams_queued_then_in_progress(oai: OpenAI) -> None:
    events = list(oai.responses.create(model="echo", input=SENTENCE, background=True, stream=True))
    kinds = [event.type for event in events]
    assert kinds[:3] == ["response.created", "response.queued", "response.in_progress"]
    assert isinstance(events[0], ResponseCreatedEvent)
    assert events[0].response.status == "queued" and events[0].response.background is True
    last = events[-1]
    assert isinstance(last, ResponseCompletedEvent)
    assert last.response.background is True and last.response.output_text == SENTENCE


@pytest.mark.parametrize(
    "body",
    [
        {"model": "echo", "input": SENTENCE},
        {"model": "echo", "input": SENTENCE, "store": False},
        {"model": "echo", "input": SENTENCE, "background": True},
        {"model": "echo", "input": "find it", "tools": [LOOKUP]},
        {"model": "echo", "input": "a b c d e f", "max_output_tokens": 3},
    ],
    ids=["stored", "store-false", "background", "function-call", "incomplete"],
)
def test_every_event_is_valid_and_in_grammar(base_url: str, api_key: str, body: dict[str, object]) -> None:
    stream = post_stream(base_url, api_key, body)
    last = stream.events[-1]
    if body.get("max_output_tokens"):
        assert last["type"] == "response.incomplete"
        assert last["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
        assert text_of(stream) == "a b c"
    else:
        assert last["type"] == "response.completed"


def test_obfuscation_pads_the_deltas_when_asked(base_url: str, api_key: str) -> None:
    body = {"model": "echo", "input": SENTENCE, "stream_options": {"include_obfuscation": True}}
    padded = post_stream(base_url, api_key, body)
    deltas = [e for e in padded.events if e["type"] == "response.output_text.delta"]
    assert deltas and all((len(e["delta"]) + len(e["obfuscation"])) % 16 == 0 for e in deltas)
    plain = post_stream(base_url, api_key, {**body, "stream_options": {"include_obfuscation": False}})
    assert not [e for e in plain.events if "obfuscation" in e]
    assert text_of(padded) == text_of(plain) == SENTENCE


def test_the_grammar_check_can_fail(base_url: str, api_key: str) -> None:
    """The state machine refuses a stream whose part comes before its item, or whose deltas do not make
    its text (a check that cannot fail checks nothing)."""
    stream = post_stream(base_url, api_key, {"model": "echo", "input": SENTENCE})
    swapped = [stream.events[0], stream.events[1], stream.events[3], stream.events[2], *stream.events[4:]]
    dropped = [e for e in stream.events if e.get("delta") != "three "]
    for events in (swapped, dropped):
        broken = Raw(names=[e["type"] for e in events], done=True)
        broken.events = [{**e, "sequence_number": n} for n, e in enumerate(events)]
        with pytest.raises(AssertionError):
            Grammar().check(broken)


def test_a_background_response_cancelled_mid_stream_ends_incomplete(
    oai: OpenAI, base_url: str, api_key: str
) -> None:
    sentence = " ".join(f"w{i}" for i in range(40))  # 2 s of echo-slow
    stream = oai.responses.create(model="echo-slow", input=sentence, background=True, stream=True)
    events = []
    for event in stream:
        events.append(event)
        if event.type == "response.output_text.delta" and len(events) == 8:
            assert isinstance(events[0], ResponseCreatedEvent)
            cancelled = oai.responses.cancel(events[0].response.id)
            assert cancelled.status == "cancelled"
    last = events[-1]
    assert last.type == "response.incomplete"
    assert last.response.status == "cancelled"
    assert 0 < len(last.response.output_text) < len(sentence)
    replayed = get_stream(base_url, api_key, last.response.id)
    Grammar().check(replayed)
    assert text_of(replayed) == last.response.output_text


def test_the_js_sdk_streams_and_resumes(base_url: str, api_key: str) -> None:
    """The openai JS SDK (tests/js/openai_response_streams.mjs): create with stream, the stream helper's
    final response, a background stream cut and resumed with starting_after, gapless to its end."""
    sentence = " ".join(f"j{i}" for i in range(30))
    settings = {
        "baseURL": f"{base_url}/v1",
        "apiKey": api_key,
        "model": "echo",
        "slowModel": "echo-slow",
        "input": sentence,
        "cut": 8,
    }
    answer = js_sdk.run("openai_response_streams.mjs", settings)
    assert "thrown" not in answer, answer
    created = answer["created"]
    assert [e["type"] for e in created][:2] == ["response.created", "response.in_progress"]
    assert created[-1]["type"] == "response.completed"
    assert "".join(e["delta"] for e in created if e["type"] == "response.output_text.delta") == sentence
    assert answer["snapshots"][-1] == sentence and answer["final"]["output_text"] == sentence
    seen, resumed, full = answer["seen"], answer["resumed"], answer["full"]
    assert len(seen) == 8 and resumed[0]["sequence_number"] == seen[-1]["sequence_number"] + 1
    assert seen + resumed == full
    assert full[-1]["type"] == "response.completed"
