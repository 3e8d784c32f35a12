"""Agents through the interactions backend: each turn a remote background interaction, created once and
followed; cancelled and deleted with ours. The back (a second instance of this server) runs the agent
`slow-researcher` (echo-slow, a word every 50 ms); the fake of Google's API cuts streams short."""

from __future__ import annotations

import os
import signal
import time

import httpx
import pytest
from google import genai
from google.genai._interactions import BadRequestError, InternalServerError

from .. import js_sdk
from ..fakes import google_interactions as gi
from ..fakes.gemini import gemini_error
from ..fakes.http import FakeServer, Script
from ..inproc import ThreadedApp
from ..replies import output_text_of, steps_of, text_of_step
from ..waiting import until
from .common import BACK_AGENT, BACK_KEY, create, finished, listed, remote_id_of

WORDS = " ".join(f"w{i}" for i in range(200))  # 10 s of echo-slow


def on_the_back(back: ThreadedApp, remote_id: str) -> httpx.Response:
    return httpx.get(
        f"{back.url}/v1beta/interactions/{remote_id}", headers={"x-goog-api-key": BACK_KEY}, timeout=10
    )


# ---------------------------------------------------------------------------------------------------------
# A remote run on another instance of this server


def test_an_agent_turn_is_a_remote_background_interaction(
    ai: genai.Client, front: ThreadedApp, back: ThreadedApp, api_key: str
) -> None:
    job = create(ai, agent="deep-research-pro", input="one two three", background=True)
    done = finished(ai, job.id)
    assert done.status == "completed" and output_text_of(done) == "one two three"
    assert done.agent == "deep-research-pro"
    remote_id = remote_id_of(front, api_key, job.id)
    assert remote_id and remote_id != job.id
    there = on_the_back(back, remote_id).json()
    assert (there["status"], there["agent"]) == ("completed", BACK_AGENT)
    assert there["steps"][-1]["content"][0]["text"] == "one two three"


def test_an_agent_runs_only_in_the_background(ai: genai.Client) -> None:
    with pytest.raises(BadRequestError) as caught:
        create(ai, agent="deep-research-pro", input="hi")
    assert "background" in str(caught.value)


def test_an_agent_turn_streamed_from_its_create(ai: genai.Client) -> None:
    events = list(
        ai.interactions.create(agent="deep-research-pro", input="a b c d", background=True, stream=True)
    )
    kinds = [e.event_type for e in events]
    assert kinds[-1] == "interaction.completed", kinds
    text = "".join(e.delta.text for e in events if e.event_type == "step.delta")
    assert text == "a b c d"


def test_our_cancel_cancels_the_remote_run_and_keeps_the_output(
    ai: genai.Client, front: ThreadedApp, back: ThreadedApp, api_key: str
) -> None:
    job = create(ai, agent="deep-research-pro", input=WORDS, background=True)
    with ai.interactions.get(job.id, stream=True) as stream:  # until its third word is out
        deltas = (e for e in stream if e.event_type == "step.delta")
        assert [next(deltas).delta.text for _ in range(3)] == ["w0 ", "w1 ", "w2 "]
    remote_id = remote_id_of(front, api_key, job.id)
    assert remote_id is not None
    started = time.monotonic()
    cancelled = ai.interactions.cancel(job.id)
    assert cancelled.status == "cancelled"
    until(lambda: on_the_back(back, remote_id).json()["status"] == "cancelled", timeout=5, interval=0.005)
    took = time.monotonic() - started
    kept = output_text_of(ai.interactions.get(job.id))
    assert kept.startswith("w0 w1 w2") and len(kept.split()) < 200
    assert took < 5, f"the remote run was cancelled {took:.3f} s after ours was asked"


def test_our_delete_deletes_the_remote_run(
    ai: genai.Client, front: ThreadedApp, back: ThreadedApp, api_key: str
) -> None:
    job = create(ai, agent="deep-research-pro", input="to be deleted", background=True)
    assert finished(ai, job.id).status == "completed"
    remote_id = remote_id_of(front, api_key, job.id)
    assert remote_id is not None and on_the_back(back, remote_id).status_code == 200
    ai.interactions.delete(job.id)
    assert on_the_back(back, remote_id).status_code == 404
    with pytest.raises(Exception, match=r"404|not found|Not Found"):
        ai.interactions.get(job.id)


# ---------------------------------------------------------------------------------------------------------
# Against the fake of Google's API: streams cut short, polls, a call for the client


def test_a_cut_stream_is_taken_up_after_its_last_event(
    ai: genai.Client, front: ThreadedApp, api_key: str, google: FakeServer
) -> None:
    first = gi.stream(
        [gi.start(0, {"type": "model_output"}), gi.delta(0, {"type": "text", "text": "Hel"})], done=False
    )
    rest = gi.stream([gi.delta(0, {"type": "text", "text": "lo"}), gi.stop(0), gi.completed()], first=4)
    google.add(Script(chunks=first.chunks, abort_after=3), rest)
    job = create(ai, agent="gemini-agent-1", input="hi", background=True)
    done = finished(ai, job.id)
    assert done.status == "completed" and output_text_of(done) == "Hello"
    created, followed = google.requests
    assert (created.method, created.path) == ("POST", "/v1beta/interactions")
    body = created.json()
    assert body["agent"] == "gemini-agent-1" and "model" not in body
    assert (body["background"], body.get("store", True), body["stream"]) == (True, True, True)
    assert (followed.method, followed.path) == ("GET", f"/v1beta/interactions/{gi.REMOTE_ID}")
    assert followed.query == "stream=true&last_event_id=evt_3"
    assert remote_id_of(front, api_key, job.id) == gi.REMOTE_ID


@pytest.mark.parametrize("cut", ["between-steps", "mid-step"])
def test_a_run_whose_stream_cannot_be_had_is_polled(ai: genai.Client, google: FakeServer, cut: str) -> None:
    """The stream is cut (after its first step, or inside it), the GET that would take it up is refused:
    the interaction is polled to its end, and what was not streamed of it is shown."""
    streamed = gi.text_events("First.") if cut == "between-steps" else gi.text_events("Fir")[:-1]
    first = gi.stream(streamed, done=False)
    steps = [
        {"type": "user_input", "content": [{"type": "text", "text": "hi"}]},
        {"type": "model_output", "content": [{"type": "text", "text": "First."}]},
        {"type": "model_output", "content": [{"type": "text", "text": "Second."}]},
    ]
    refused = Script(status=405, body=b'{"error": {"code": 405, "message": "no stream here"}}')
    google.add(
        Script(chunks=first.chunks, abort_after=len(first.chunks or [])),
        refused,
        gi.interaction("in_progress", steps[:2]),
        gi.interaction("completed", steps),
    )
    job = create(ai, agent="gemini-agent-1", input="hi", background=True)
    done = finished(ai, job.id)
    assert done.status == "completed", done.errors
    assert [text_of_step(s) for s in steps_of(done) if s.type == "model_output"] == ["First.", "Second."]
    assert [r.method for r in google.requests] == ["POST", "GET", "GET", "GET"]
    assert google.requests[2].query == "" and google.requests[1].query.startswith("stream=true")


def test_a_remote_function_call_is_ours_to_answer(ai: genai.Client, google: FakeServer) -> None:
    google.add(gi.function_call_script("get_weather", '{"city": "Paris"}'))
    job = create(ai, agent="gemini-agent-1", input="Weather?", background=True)
    done = finished(ai, job.id)
    assert done.status == "requires_action"
    [call] = [s for s in steps_of(done) if s.type == "function_call"]
    assert (call.name, call.arguments) == ("get_weather", {"city": "Paris"})


def test_a_delete_the_upstream_refuses_deletes_nothing_here(ai: genai.Client, google: FakeServer) -> None:
    google.add(gi.text_script("kept"))
    job = create(ai, agent="gemini-agent-1", input="hi", background=True)
    assert finished(ai, job.id).status == "completed"
    google.add(gemini_error(500, "Internal error encountered.", "INTERNAL"))
    with pytest.raises(InternalServerError) as caught:
        ai.interactions.delete(job.id)
    assert "Internal error encountered." in str(caught.value)
    assert output_text_of(ai.interactions.get(job.id)) == "kept", "nothing was deleted here"
    google.add(Script(body=b"{}", content_type="application/json"))
    ai.interactions.delete(job.id)
    deleting = google.requests[-1]
    assert (deleting.method, deleting.path) == ("DELETE", f"/v1beta/interactions/{gi.REMOTE_ID}")
    with pytest.raises(Exception, match=r"404|not found|Not Found"):
        ai.interactions.get(job.id)


@pytest.mark.parametrize("retries", [0, None], ids=["retries-off", "default-retries"])
def test_the_js_sdk_runs_an_agent(
    front: ThreadedApp, back: ThreadedApp, api_key: str, retries: int | None
) -> None:
    """@google/genai (tests/js/google_agent.mjs): a background agent create, then gets until it ended; one
    remote run made for it, whatever the SDK's retries."""
    stored_there = len(listed(back.url, BACK_KEY))
    settings = {"baseUrl": front.url, "apiKey": api_key, "maxRetries": retries}
    answer = js_sdk.run("google_agent.mjs", {**settings, "agent": "deep-research-js", "input": "from js"})
    assert "thrown" not in answer, answer
    created, got = answer["created"], answer["got"]
    assert created["status"] in ("queued", "in_progress") and created["agent"] == "deep-research-js"
    assert got["status"] == "completed" and got["output_text"] == "from js"
    assert answer["sent"] == ["POST /v1/interactions", f"GET /v1/interactions/{created['id']}"]
    assert len(listed(back.url, BACK_KEY)) == stored_there + 1


def test_a_remote_run_goes_on_through_a_frozen_redis(
    ai: genai.Client, front: ThreadedApp, back: ThreadedApp
) -> None:
    """The front's Redis frozen (SIGSTOP) for 3 s mid-run, longer than a lease: the run follows on, ends with
    its whole answer once Redis is back, and no second remote run is made."""
    stored_there = len(listed(back.url, BACK_KEY))
    text = " ".join(f"w{i}" for i in range(40))  # 2 s on the back
    job = create(ai, agent="deep-research-pro", input=text, background=True)
    with ai.interactions.get(job.id, stream=True) as stream:
        deltas = (e for e in stream if e.event_type == "step.delta")
        for _ in range(5):
            next(deltas)
    process = front.app.redis.process
    assert process is not None
    os.kill(process.pid, signal.SIGSTOP)
    try:
        time.sleep(3)
    finally:
        os.kill(process.pid, signal.SIGCONT)
    done = finished(ai, job.id, timeout=40)
    assert done.status == "completed", done.errors
    assert output_text_of(done) == text
    assert len(listed(back.url, BACK_KEY)) == stored_there + 1
