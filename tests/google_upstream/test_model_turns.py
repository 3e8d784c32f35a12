"""Model turns through the interactions backend (Google's Interactions API, called statelessly), end to end
with the official SDK: through a second instance of this server, and through a fake of Google's API for
what only Google makes (conftest.py)."""

from __future__ import annotations

import pytest
from google import genai
from google.genai._interactions import InternalServerError, RateLimitError

from tests.fakes import google_interactions as gi
from tests.fakes.gemini import gemini_error
from tests.fakes.http import FakeServer

from ..ha.sdk_retries import retrying_sdk
from ..inproc import ThreadedApp
from ..metrics_scrape import scrape
from ..replies import error_of, id_of, output_text_of, steps_of, streamed_text, usage_of
from ..waiting import until
from .common import BACK_KEY, WEATHER_TOOL, create, listed, step_types

# ---------------------------------------------------------------------------------------------------------
# Another instance of this server as the upstream


def test_a_turn_through_another_instance_is_stored_here_only(ai: genai.Client, back: ThreadedApp) -> None:
    stored_there = len(listed(back.url, BACK_KEY))  # the agents' remote runs are stored there
    reply = create(ai, model="remote-echo", input="Hello over there")
    assert reply.status == "completed"
    assert output_text_of(reply) == "Hello over there"
    assert usage_of(reply).total_output_tokens == 3, "the back's usage is the front's"
    got = ai.interactions.get(id_of(reply))
    assert got.status == "completed" and output_text_of(got) == "Hello over there"
    assert len(listed(back.url, BACK_KEY)) == stored_there, "the upstream was asked store: false"


def test_a_stream_through_another_instance(ai: genai.Client) -> None:
    events = list(ai.interactions.create(model="remote-echo", input="one two three four", stream=True))
    kinds = [e.event_type for e in events]
    assert kinds[0] == "interaction.created" and kinds[-1] == "interaction.completed"
    assert streamed_text(events) == "one two three four"
    assert kinds.count("step.delta") == 4, "the back's deltas arrive as it sent them"
    stored = ai.interactions.get(events[0].interaction.id)
    assert output_text_of(stored) == "one two three four"


def test_function_calling_through_another_instance(ai: genai.Client) -> None:
    first = create(ai, model="remote-echo", input="Weather in Paris?", tools=[WEATHER_TOOL])
    assert first.status == "requires_action"
    [call] = [s for s in steps_of(first) if s.type == "function_call"]
    assert call.name == "get_weather" and call.id
    second = create(
        ai,
        model="remote-echo",
        previous_interaction_id=first.id,
        input=[{"type": "function_result", "call_id": call.id, "name": "get_weather", "result": "sunny"}],
        tools=[WEATHER_TOOL],
    )
    assert second.status == "completed"
    assert "sunny" in output_text_of(second), "the back saw the result the client sent the front"


def test_a_chain_crosses_providers(ai: genai.Client, google: FakeServer) -> None:
    """echo here, then echo on the back, then Google: each upstream is sent the whole conversation."""
    first = create(ai, model="echo", input="one two")
    second = create(ai, model="remote-echo", input="three", previous_interaction_id=first.id)
    assert output_text_of(second) == "three"
    assert usage_of(first).total_input_tokens == 2
    assert usage_of(second).total_input_tokens == 5, "the back counted the chain: one two, one two, three"
    google.add(gi.text_script("four"))
    third = create(ai, model="gemini-3-flash-preview", input="and?", previous_interaction_id=second.id)
    assert output_text_of(third) == "four"
    [sent] = google.requests
    texts = [(step["type"], step["content"][0]["text"]) for step in sent.json()["input"]]
    assert texts == [
        ("user_input", "one two"),
        ("model_output", "one two"),
        ("user_input", "three"),
        ("model_output", "three"),
        ("user_input", "and?"),
    ]


def test_background_turn_through_another_instance(ai: genai.Client) -> None:
    job = create(ai, model="remote-echo", input="in the background", background=True)
    until(lambda: ai.interactions.get(job.id).status == "completed", timeout=15)
    assert output_text_of(ai.interactions.get(job.id)) == "in the background"


def test_a_cancel_here_ends_the_call_to_the_other_instance(ai: genai.Client, back: ThreadedApp) -> None:
    """echo-slow on the back says a word each 50 ms; our cancel closes the stream, which ends its run. (Both
    apps share this process's metrics: a run of `echo-slow` is the back's, the front's is `remote-slow`.)"""
    before = cancelled_on_the_back(back)
    job = create(ai, model="remote-slow", input=" ".join(f"w{i}" for i in range(200)), background=True)
    with ai.interactions.get(job.id, stream=True) as stream:  # until its third word is out
        deltas = (e for e in stream if e.event_type == "step.delta")
        assert [next(deltas).delta.text for _ in range(3)] == ["w0 ", "w1 ", "w2 "]
    cancelled = ai.interactions.cancel(job.id)
    assert cancelled.status == "cancelled"
    kept = output_text_of(ai.interactions.get(job.id))
    assert kept.startswith("w0 w1 w2"), "its partial output is kept"
    # the back ran it in the foreground (stream, store false): the closed connection cancels its run
    until(lambda: cancelled_on_the_back(back) == before + 1, timeout=5)
    assert len(output_text_of(ai.interactions.get(job.id))) == len(kept), "nothing is added after the cancel"


def cancelled_on_the_back(back: ThreadedApp) -> float:
    samples = scrape(back.url).matching("ix_runs_ended_total", model="echo-slow", status="cancelled")
    return sum(value for _, value in samples)


# ---------------------------------------------------------------------------------------------------------
# What only Google makes: built-in tool steps and signatures, kept as sent and replayed


def test_built_in_tool_steps_are_kept_and_replayed_to_google(ai: genai.Client, google: FakeServer) -> None:
    google.add(gi.search_script())
    first = create(
        ai, model="gemini-3-flash-preview", input="Weather in Paris?", tools=[{"type": "google_search"}]
    )
    assert step_types(first) == ["google_search_call", "google_search_result", "model_output"]
    assert output_text_of(first) == "Sunny in Paris"
    assert google.requests[0].json()["tools"] == [{"type": "google_search"}]
    google.add(gi.text_script("Tomorrow too"))
    create(ai, model="gemini-3-flash-preview", input="Tomorrow?", previous_interaction_id=first.id)
    replayed = google.requests[1].json()["input"]
    assert [s["type"] for s in replayed] == [
        "user_input",
        "google_search_call",
        "google_search_result",
        "model_output",
        "user_input",
    ]
    assert replayed[1] == {
        "type": "google_search_call",
        "id": "gs_1",
        "arguments": {"queries": ["weather paris"]},
    }
    assert replayed[2]["call_id"] == "gs_1" and replayed[2]["result"] == [{"url": "https://example.com"}]


def test_streamed_built_in_tool_steps(ai: genai.Client, google: FakeServer) -> None:
    google.add(gi.search_script())
    events = list(ai.interactions.create(model="gemini-3-flash-preview", input="Weather?", stream=True))
    starts = [e.step.type for e in events if e.event_type == "step.start"]
    assert starts == ["google_search_call", "google_search_result", "model_output"]
    stored = ai.interactions.get(events[0].interaction.id)
    assert step_types(stored) == ["user_input", "google_search_call", "google_search_result", "model_output"]


def test_a_thought_signature_goes_back_to_google_as_google_sent_it(
    ai: genai.Client, google: FakeServer
) -> None:
    google.add(gi.thought_script("Z29vZ2xlLXNpZw==", "42"))
    first = create(ai, model="gemini-3-flash-preview", input="Think")
    [thought] = [s for s in steps_of(first) if s.type == "thought"]
    assert thought.signature and thought.signature != "Z29vZ2xlLXNpZw==", "sealed as this backend's"
    google.add(gi.text_script("ok"))
    create(ai, model="gemini-3-flash-preview", input="Again", previous_interaction_id=first.id)
    [sent] = [s for s in google.requests[1].json()["input"] if s["type"] == "thought"]
    assert sent["signature"] == "Z29vZ2xlLXNpZw=="


def test_googles_function_call_is_ours_to_answer(ai: genai.Client, google: FakeServer) -> None:
    google.add(gi.function_call_script("get_weather", '{"city": "Paris"}'), gi.text_script("Sunny."))
    first = create(ai, model="gemini-3-flash-preview", input="Weather?", tools=[WEATHER_TOOL])
    assert first.status == "requires_action"
    [call] = [s for s in steps_of(first) if s.type == "function_call"]
    assert (call.id, call.arguments) == ("call_g1", {"city": "Paris"})
    second = create(
        ai,
        model="gemini-3-flash-preview",
        previous_interaction_id=first.id,
        input=[{"type": "function_result", "call_id": "call_g1", "result": "sunny"}],
    )
    assert output_text_of(second) == "Sunny."
    steps = google.requests[1].json()["input"]
    assert steps[-1] == {
        "type": "function_result",
        "call_id": "call_g1",
        "name": "get_weather",
        "result": "sunny",
    }


# ---------------------------------------------------------------------------------------------------------
# Google's errors


def test_googles_429_reaches_the_client_with_its_wait(ai: genai.Client, google: FakeServer) -> None:
    google.add(gemini_error(429, "Quota exceeded for interactions", "RESOURCE_EXHAUSTED", retry_delay="21s"))
    with pytest.raises(RateLimitError) as caught:
        create(ai, model="gemini-3-flash-preview", input="hi")
    assert caught.value.response.headers["retry-after"] == "21"
    assert "Quota exceeded for interactions" in str(caught.value) and "interactions" in str(caught.value)


def test_an_error_event_fails_the_turn_keeping_its_output(ai: genai.Client, google: FakeServer) -> None:
    google.add(gi.error_event_script("internal", "Backend crashed"))
    reply = create(ai, model="gemini-3-flash-preview", input="hi")
    assert reply.status == "failed" and output_text_of(reply) == "partial"
    assert "Backend crashed" in error_of(reply)[1]


def test_a_5xx_is_seen_without_retries_and_retried_once_with_them(
    ai: genai.Client, front: ThreadedApp, api_key: str, google: FakeServer
) -> None:
    overloaded = gemini_error(503, "The model is overloaded.", "UNAVAILABLE")
    google.add(overloaded)
    with pytest.raises(InternalServerError):
        create(ai, model="gemini-3-flash-preview", input="hi")
    assert listed(front.url, api_key) == [], "a failed create keeps nothing"
    google.add(overloaded, gi.text_script("at last"))
    reply = create(retrying_sdk(front.url, api_key), model="gemini-3-flash-preview", input="hi")
    assert output_text_of(reply) == "at last"
    assert [i["id"] for i in listed(front.url, api_key)] == [reply.id], "the retry made one interaction"
    assert len(google.requests) == 3
