"""End to end, with a worker process: background runs against failing upstreams (retries, `Retry-After`,
failures that must not be retried), and cancels that really close the upstream connection (issue 3), for
background runs in a worker and for a foreground stream whose client goes away.

The fakes and the stack come from test_upstreams_api (this module gets its own instance of each).
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import httpx
import pytest
from google import genai
from google.genai._interactions import InternalServerError
from google.genai.interactions import FunctionCallStep, Interaction

from tests.fakes import anthropic as an
from tests.fakes import gemini as gm
from tests.fakes import openai as oa
from tests.fakes.http import FakeServer, Script

from . import test_upstreams_api as e2e
from .replies import error_of, id_of, interaction, output_text_of, steps_of
from .sse import events as sse_events
from .sse import text_of
from .support import Stack
from .test_upstreams_api import MODEL, RETRY, SECRETS, Upstreams, wait_status, words_script
from .waiting import until

# this module's instances of the fakes and the stack, and the per-test reset and clients
upstreams = e2e.upstreams
e2e_stack = e2e.e2e_stack
url = e2e.url
fresh = e2e.fresh
ai = e2e.ai
api = e2e.api


def gaps(fake: FakeServer) -> list[float]:
    times = [r.received_at for r in fake.requests]
    return [round(b - a, 3) for a, b in itertools.pairwise(times)]


def create_background(ai: genai.Client, backend: str, text: str = "Hello?") -> str:
    """A background interaction on the backend's model; its id."""
    reply = interaction(ai.interactions.create(model=MODEL[backend], input=text, background=True))
    assert reply.status == "in_progress"
    assert not reply.steps
    return id_of(reply)


# ---------------------------------------------------------------------------------------------------------
# Background retries


def test_background_retries_503_and_429_honouring_retry_after(ai: genai.Client, upstreams: Upstreams) -> None:
    fake = upstreams.gemini
    fake.add(
        gm.gemini_error(503, "The model is overloaded.", "UNAVAILABLE", {"Retry-After": "1"}),
        gm.gemini_error(429, "Resource has been exhausted.", "RESOURCE_EXHAUSTED", {"Retry-After": "1"}),
        gm.gemini_text_script("Hello world"),
    )
    interaction_id = create_background(ai, "gemini")
    done: Interaction = wait_status(ai, interaction_id, "completed", "failed", timeout=20)
    assert done.status == "completed", done.errors
    assert done.output_text == "Hello world"
    assert not done.errors
    assert len(fake.requests) == 3
    waited = gaps(fake)
    print(f"\nbackground retry gaps with Retry-After: 1 -> {waited} s")
    # the backoff alone would be at most 0.05 s then 0.1 s: the waits are the upstream's Retry-After
    assert all(gap >= 0.9 for gap in waited), waited


def test_background_backoff_without_retry_after_is_jittered_under_the_exponential(
    ai: genai.Client, upstreams: Upstreams
) -> None:
    fake = upstreams.openai
    fake.add(
        oa.openai_error(500, "The server had an error while processing your request.", "server_error"),
        oa.openai_error(502, "Bad gateway", "server_error"),
        oa.openai_text_script("Recovered"),
    )
    interaction_id = create_background(ai, "openai")
    done: Interaction = wait_status(ai, interaction_id, "completed", "failed")
    assert done.status == "completed" and done.output_text == "Recovered"
    waited = gaps(fake)
    print(f"\nbackground retry gaps without Retry-After -> {waited} s")
    assert len(waited) == 2
    # full jitter: each wait is anywhere from 0 to the capped exponential, plus the request's own time
    initial = RETRY["backoff_initial_seconds"]
    assert waited[0] <= initial + 1.0 and waited[1] <= 2 * initial + 1.0


def test_background_that_always_fails_names_the_upstream_status_and_message(
    ai: genai.Client, api: httpx.Client, upstreams: Upstreams
) -> None:
    fake = upstreams.openai
    message = "The server had an error while processing your request."
    fake.add(*[oa.openai_error(503, message, "server_error") for _ in range(int(RETRY["attempts"]) + 2)])
    interaction_id = create_background(ai, "openai")
    done: Interaction = wait_status(ai, interaction_id, "completed", "failed")
    assert done.status == "failed"
    assert done.errors, "a failed interaction says why"
    code, said = error_of(done)
    assert "503" in code + said
    assert message in said and "openai" in said
    time.sleep(0.3)  # no attempt after the last one
    assert len(fake.requests) == RETRY["attempts"]
    # the event log agrees with the record: it ends with the same error
    with api.stream("GET", f"/v1beta/interactions/{interaction_id}", params={"stream": "true"}) as response:
        replay = list(sse_events(response))
    assert replay[-1]["event_type"] == "error"
    assert replay[-1]["error"]["message"] == said


@pytest.mark.parametrize(
    ("status", "kind", "message"),
    [
        (400, "invalid_request_error", "messages.0.content: image exceeds 5 MB maximum"),
        (401, "authentication_error", "invalid x-api-key"),
    ],
)
def test_background_4xx_fails_at_once(
    status: int, kind: str, message: str, ai: genai.Client, upstreams: Upstreams
) -> None:
    fake = upstreams.anthropic
    fake.add(*[an.anthropic_error(status, kind, message) for _ in range(3)])
    interaction_id = create_background(ai, "anthropic")
    done: Interaction = wait_status(ai, interaction_id, "completed", "failed")
    assert done.status == "failed"
    code, said = error_of(done)
    assert str(status) in code + said and message in said
    time.sleep(0.3)
    assert len(fake.requests) == 1


def test_background_failure_after_output_is_not_retried(ai: genai.Client, upstreams: Upstreams) -> None:
    fake = upstreams.openai
    fake.add(oa.openai_midstream_error_script("The server had an error"), oa.openai_text_script("Again"))
    interaction_id = create_background(ai, "openai")
    done: Interaction = wait_status(ai, interaction_id, "completed", "failed")
    assert done.status == "failed"
    assert done.output_text == "Hel"
    assert "The server had an error" in error_of(done)[1]
    time.sleep(0.3)
    assert len(fake.requests) == 1


def test_background_timeout_is_retried_then_fails_naming_the_backend(
    ai: genai.Client, upstreams: Upstreams
) -> None:
    """`gemini-slow-*` gives up reading after 0.5 s; a timeout is worth another attempt, up to the limit."""
    fake = upstreams.gemini
    fake.add(*[gm.gemini_text_script("late", first_chunk_delay=3.0) for _ in range(int(RETRY["attempts"]))])
    interaction_id = id_of(
        interaction(ai.interactions.create(model="gemini-slow-1", input="hi", background=True))
    )
    done: Interaction = wait_status(ai, interaction_id, "completed", "failed")
    assert done.status == "failed"
    code, message = error_of(done)
    assert code == "upstream_timeout"
    assert "gemini" in message and "timed out" in message
    assert len(fake.requests) == RETRY["attempts"]
    until(lambda: len(fake.disconnects) == RETRY["attempts"], timeout=5)


def test_background_unreachable_upstream_fails_naming_the_backend(ai: genai.Client) -> None:
    interaction_id = id_of(
        interaction(ai.interactions.create(model="dead-model", input="hi", background=True))
    )
    done: Interaction = wait_status(ai, interaction_id, "completed", "failed")
    assert done.status == "failed"
    code, message = error_of(done)
    assert code == "upstream_unavailable"
    assert "openai" in message and "connect" in message.lower()


def test_background_function_call_round_trip(ai: genai.Client, upstreams: Upstreams) -> None:
    fake = upstreams.gemini
    fake.add(gm.gemini_function_call_script("get_weather", {"city": "Oslo"}), gm.gemini_text_script("Cold."))
    tools = [e2e.WEATHER_TOOL]
    first_id = id_of(
        interaction(
            ai.interactions.create(model=MODEL["gemini"], input="Oslo?", tools=tools, background=True)
        )
    )
    first: Interaction = wait_status(ai, first_id, "requires_action", "completed", "failed")
    assert first.status == "requires_action"
    call = next(s for s in steps_of(first) if isinstance(s, FunctionCallStep))  # type "function_call"
    assert call.arguments == {"city": "Oslo"}
    second_id = id_of(
        interaction(
            ai.interactions.create(
                model=MODEL["gemini"],
                previous_interaction_id=first_id,
                input=[{"type": "function_result", "call_id": call.id, "result": {"temp_c": -3}}],
                tools=tools,
                background=True,
            )
        )
    )
    second: Interaction = wait_status(ai, second_id, "completed", "failed")
    assert second.status == "completed" and second.output_text == "Cold."
    assert fake.requests[1].json()["contents"][-1] == {
        "role": "user",
        "parts": [{"functionResponse": {"name": "get_weather", "response": {"temp_c": -3}}}],
    }


def test_cancel_during_the_retry_backoff_stops_the_retries(ai: genai.Client, upstreams: Upstreams) -> None:
    fake = upstreams.gemini
    fake.add(
        gm.gemini_error(503, "Overloaded", "UNAVAILABLE", {"Retry-After": "1"}),
        gm.gemini_text_script("too late"),
    )
    interaction_id = create_background(ai, "gemini")
    until(lambda: fake.requests, timeout=10)
    cancelled = ai.interactions.cancel(interaction_id)
    assert cancelled.status == "cancelled"
    time.sleep(1.5)  # past the Retry-After
    assert len(fake.requests) == 1
    assert ai.interactions.get(interaction_id).status == "cancelled"


# ---------------------------------------------------------------------------------------------------------
# Cancel closes the upstream connection


def wait_for_words(api: httpx.Client, interaction_id: str, words: int) -> str:
    """Follow the interaction's stream until `words` words have come out; the text so far."""
    seen: list[dict[str, Any]] = []
    with api.stream("GET", f"/v1beta/interactions/{interaction_id}", params={"stream": "true"}) as response:
        assert response.status_code == 200
        for event in sse_events(response):
            seen.append(event)
            if len(text_of(seen).split()) >= words:
                break
    return text_of(seen)


def test_cancel_of_a_background_run_in_a_worker_closes_the_upstream_connection(
    ai: genai.Client, api: httpx.Client, upstreams: Upstreams
) -> None:
    fake = upstreams.gemini
    fake.add(words_script("gemini", count=100, delay=0.1))  # 10 s unless cancelled
    completed = fake.completed
    interaction_id = create_background(ai, "gemini")
    wait_for_words(api, interaction_id, 3)

    asked = time.monotonic()
    cancelled = ai.interactions.cancel(interaction_id)  # through the web process; the run is in the worker
    answered = time.monotonic()
    until(lambda: fake.disconnects, timeout=5)
    latency = fake.disconnects[0] - asked
    print(
        f"\ncancel -> upstream connection closed: {latency * 1000:.0f} ms "
        f"(cancel answered in {(answered - asked) * 1000:.0f} ms)"
    )
    assert latency < 2.0, "the upstream call is stopped by the cancel, not by running out"
    assert fake.completed == completed and len(fake.requests) == 1

    assert cancelled.status == "cancelled"
    text = output_text_of(cancelled)
    words = text.split()
    full = " ".join(f"w{i}" for i in range(100))
    assert len(words) >= 3 and full.startswith(" ".join(words)), text
    # each chunk carried its usage: the cancelled interaction keeps what was used until then
    assert cancelled.usage is not None
    assert cancelled.usage.total_output_tokens in (len(words) - 1, len(words))
    assert cancelled.usage.total_input_tokens == 5

    # and it stays so; the event log says the same
    time.sleep(0.3)
    again = ai.interactions.get(interaction_id)
    assert again.status == "cancelled" and again.output_text == text
    with api.stream("GET", f"/v1beta/interactions/{interaction_id}", params={"stream": "true"}) as response:
        replay = list(sse_events(response))
    assert replay[-1]["event_type"] == "interaction.completed"
    assert replay[-1]["interaction"]["status"] == "cancelled"
    assert text_of(replay) == text


def test_foreground_stream_disconnect_cancels_the_run_and_closes_the_upstream(
    api: httpx.Client, ai: genai.Client, upstreams: Upstreams
) -> None:
    fake = upstreams.gemini
    fake.add(words_script("gemini", count=100, delay=0.1))
    completed = fake.completed
    body = {"model": MODEL["gemini"], "input": "Count", "stream": True}
    seen: list[dict[str, Any]] = []
    with api.stream("POST", "/v1beta/interactions", json=body) as response:
        assert response.status_code == 200
        for event in sse_events(response):
            seen.append(event)
            if len(text_of(seen).split()) >= 3:
                break
        dropped = time.monotonic()
        # leaving the block closes the connection mid-stream
    interaction_id = seen[0]["interaction"]["id"]
    until(lambda: fake.disconnects, timeout=5)
    print(f"\nclient dropped -> upstream connection closed: {(fake.disconnects[0] - dropped) * 1000:.0f} ms")
    assert fake.completed == completed

    stopped: Interaction = wait_status(ai, interaction_id, "cancelled", "completed", "failed", timeout=10)
    assert stopped.status == "cancelled"
    words = output_text_of(stopped).split()
    assert len(words) >= 3 and " ".join(f"w{i}" for i in range(len(words))) == " ".join(words)
    assert stopped.usage is not None and stopped.usage.total_output_tokens in (len(words) - 1, len(words))


def test_background_stream_disconnect_does_not_cancel(
    api: httpx.Client, ai: genai.Client, upstreams: Upstreams
) -> None:
    """With background=true the stream is only a view: the run goes on when its client leaves (spec 9.5)."""
    fake = upstreams.gemini
    fake.add(words_script("gemini", count=15, delay=0.05))
    completed = fake.completed
    body = {"model": MODEL["gemini"], "input": "Count", "stream": True, "background": True}
    seen: list[dict[str, Any]] = []
    with api.stream("POST", "/v1beta/interactions", json=body) as response:
        assert response.status_code == 200
        for event in sse_events(response):
            seen.append(event)
            if len(text_of(seen).split()) >= 2:
                break
    interaction_id = next(e["interaction"]["id"] for e in seen if e["event_type"] == "interaction.created")
    done: Interaction = wait_status(ai, interaction_id, "completed", "cancelled", "failed", timeout=10)
    assert done.status == "completed"
    assert output_text_of(done).split() == [f"w{i}" for i in range(15)]
    assert fake.disconnects == [] and fake.completed == completed + 1


def test_foreground_stream_disconnect_while_the_upstream_is_silent(
    api: httpx.Client, ai: genai.Client, upstreams: Upstreams
) -> None:
    """A thinking model may say nothing for a long time: a client that leaves then is still noticed, and the
    upstream call stopped, without waiting for the upstream's next token."""
    fake = upstreams.gemini
    fake.add(gm.gemini_text_script("finally", first_chunk_delay=8.0))
    body = {"model": MODEL["gemini"], "input": "Think hard", "stream": True}
    with api.stream("POST", "/v1beta/interactions", json=body) as response:
        # keep the reader: a dropped generator closes the response (and so the connection) at once
        reader = sse_events(response)
        first = next(reader)
        # leave once the upstream call is under way (before it, there is no connection to close)
        until(lambda: fake.requests, timeout=5)
        dropped = time.monotonic()
    interaction_id = first["interaction"]["id"]
    until(lambda: fake.disconnects, timeout=6)
    latency = (fake.disconnects[0] - dropped) * 1000
    print(f"\nclient dropped during silence -> upstream connection closed: {latency:.0f} ms")
    stopped: Interaction = wait_status(ai, interaction_id, "cancelled", "completed", "failed", timeout=5)
    assert stopped.status == "cancelled"


def test_background_overload_right_after_message_start_is_retried(
    ai: genai.Client, upstreams: Upstreams
) -> None:
    """Anthropic's overloaded_error often arrives as an SSE event after the 200 and `message_start`, before
    any content: no output was made, so a background run retries it like a 529."""
    fake = upstreams.anthropic
    fake.add(overloaded_after_message_start(), an.anthropic_text_script("Hello world"))
    interaction_id = create_background(ai, "anthropic")
    done: Interaction = wait_status(ai, interaction_id, "completed", "failed")
    assert len(fake.requests) == 2, [e.message for e in done.errors or []]
    assert done.status == "completed" and done.output_text == "Hello world"


def overloaded_after_message_start() -> Script:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    return an.script([an.message_start(), error])


def test_foreground_overload_right_after_message_start_is_an_http_error(
    ai: genai.Client, upstreams: Upstreams
) -> None:
    """No output was made: like a 529 status, this is our 502 naming the backend (spec: broken upstream)."""
    upstreams.anthropic.add(overloaded_after_message_start())
    with pytest.raises(InternalServerError) as caught:
        ai.interactions.create(model=MODEL["anthropic"], input="hi")
    assert caught.value.status_code == 502
    assert "anthropic" in str(caught.value) and "Overloaded" in str(caught.value)


def test_upstream_keys_are_not_logged(e2e_stack: Stack) -> None:
    """Runs last: after all the failures above, no web or worker log holds an upstream API key."""
    logs = "".join(p.log() for p, _url in e2e_stack.servers) + "".join(p.log() for p in e2e_stack.workers)
    assert logs, "the processes did log something"
    assert not any(secret in logs for secret in SECRETS.values())
