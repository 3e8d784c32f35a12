"""SSE on create and get: the event sequence, live relay, resume from any web process, disconnects."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis as sync_redis
from google import genai
from google.genai._interactions import BadRequestError
from google.genai.interactions import (
    FunctionCallStep,
    InteractionCompletedEvent,
    InteractionCreatedEvent,
    InteractionSSEEvent,
    StepDelta,
    StepStart,
)

from .replies import all_events, event_id_of, id_of, interaction, streamed_text, text_of_step
from .sse import events, text_of
from .support import Stack, new_key, running_stack, sdk, tenant_of
from .waiting import until

#: the lifecycle, cancel and streaming tests on the shared stack run on every way the README starts it
EVERY_TOPOLOGY = True

SENTENCE = " ".join(f"s{i}" for i in range(60))  # 3 s of echo-slow


@pytest.fixture(scope="module")
def streams(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Two web processes and one worker on one Redis; keep-alives every second."""
    config = {"runner": {"keepalive_seconds": 1.0}}
    with running_stack(
        Path(tmp_path_factory.mktemp("streams")), config=config, servers=2, workers=1
    ) as stack:
        yield stack


def _urls(stack: Stack) -> tuple[str, str]:
    return stack.servers[0][1], stack.servers[1][1]


def test_create_stream_with_the_sdk(client: genai.Client) -> None:
    received = all_events(
        client.interactions.create(model="echo", input="Count to three please", stream=True)
    )
    kinds = [e.event_type for e in received]
    assert kinds[:2] == ["interaction.created", "interaction.status_update"]
    assert kinds[2] == "step.start" and kinds[-3] == "step.stop"
    assert set(kinds[3:-3]) == {"step.delta"}
    assert kinds[-2:] == ["interaction.status_update", "interaction.completed"]
    ids = [event_id_of(e) for e in received]
    assert len(set(ids)) == len(ids) and all(ids)
    text = streamed_text(received)
    assert text == "Count to three please"
    assert isinstance(received[0], InteractionCreatedEvent)
    assert isinstance(received[-1], InteractionCompletedEvent)
    completed = received[-1].interaction
    assert completed.status == "completed"
    assert completed.id == received[0].interaction.id
    # sttp-ai reads the answer from interaction.completed: it carries the steps and the usage
    assert completed.steps and text_of_step(completed.steps[0]) == text
    assert completed.usage and completed.usage.total_output_tokens == 4


def test_frames_are_lf_only_with_event_lines(http: httpx.Client) -> None:
    with http.stream(
        "POST", "/v1beta/interactions", json={"model": "echo", "input": "hi there", "stream": True}
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"] == "no-cache"
        assert response.headers["x-accel-buffering"] == "no"
        raw = response.read().decode()
    assert "\r" not in raw
    for message in raw.strip().split("\n\n"):
        lines = message.split("\n")
        assert lines[0].startswith("event: ")
        assert lines[1].startswith("data: {")
        assert f'"event_type":"{lines[0][7:]}"' in lines[1]


def test_function_call_streams_arguments_delta(beta: genai.Client) -> None:
    tool = {
        "type": "function",
        "name": "lookup",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    }
    received = all_events(beta.interactions.create(model="echo", input="find it", tools=[tool], stream=True))
    start = next(e for e in received if isinstance(e, StepStart))
    assert isinstance(start.step, FunctionCallStep) and start.step.name == "lookup" and start.step.id
    delta = next(e for e in received if isinstance(e, StepDelta))
    assert delta.delta.type == "arguments_delta"
    assert isinstance(received[-1], InteractionCompletedEvent)
    assert received[-1].interaction.status == "requires_action"


def test_resume_from_another_web_process_has_no_gap_and_no_duplicate(streams: Stack) -> None:
    first, second = _urls(streams)
    key = new_key()
    one, two = sdk(first, key), sdk(second, key)
    reply = id_of(interaction(one.interactions.create(model="echo-slow", input=SENTENCE, background=True)))
    seen: list[InteractionSSEEvent] = []
    for event in one.interactions.get(reply, stream=True):
        seen.append(event)
        if len(seen) == 12:
            break  # drop the connection mid-run
    resumed = all_events(two.interactions.get(reply, stream=True, last_event_id=event_id_of(seen[-1])))
    full = all_events(two.interactions.get(reply, stream=True))
    assert [event_id_of(e) for e in seen + resumed] == [event_id_of(e) for e in full]
    assert full[-1].event_type == "interaction.completed"
    text = streamed_text(full)
    assert text == SENTENCE


def test_background_stream_survives_its_client(streams: Stack) -> None:
    first, second = _urls(streams)
    key = new_key()
    with httpx.Client(base_url=first, headers={"x-goog-api-key": key}, timeout=30) as http:
        body = {"model": "echo-slow", "input": SENTENCE, "background": True, "stream": True}
        with http.stream("POST", "/v1beta/interactions", json=body) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            head: list[dict[str, Any]] = []
            for event in events(response):
                head.append(event)
                if len(head) == 6:
                    break
    interaction_id = head[0]["interaction"]["id"]
    last = head[-1]["event_id"]
    with httpx.Client(base_url=second, headers={"x-goog-api-key": key}, timeout=30) as http:
        params = {"stream": "true", "last_event_id": last}
        with http.stream("GET", f"/v1beta/interactions/{interaction_id}", params=params) as response:
            tail = list(events(response))
    assert tail[-1]["event_type"] == "interaction.completed"
    assert tail[-1]["interaction"]["status"] == "completed"
    assert text_of(head + tail) == SENTENCE


def test_foreground_stream_disconnect_cancels_and_keeps_the_partial_output(streams: Stack) -> None:
    url, _ = _urls(streams)
    key = new_key()
    with httpx.Client(base_url=url, headers={"x-goog-api-key": key}, timeout=30) as http:
        body = {"model": "echo-slow", "input": SENTENCE, "stream": True}
        with http.stream("POST", "/v1beta/interactions", json=body) as response:
            head: list[dict[str, Any]] = []
            for event in events(response):
                head.append(event)
                if len(head) == 8:
                    break
        interaction_id = head[0]["interaction"]["id"]

        def cancelled() -> dict[str, Any] | None:
            got = http.get(f"/v1beta/interactions/{interaction_id}", params={"stream": "false"}).json()
            return got if got["status"] == "cancelled" else None

        record = until(cancelled, timeout=10)
    output = record["steps"][-1]["content"][0]["text"]
    assert SENTENCE.startswith(output)
    assert len(output.split()) >= len(text_of(head).split())
    assert record["usage"]["total_output_tokens"] == len(output.split())


def test_replay_of_a_finished_interaction_from_its_record(streams: Stack) -> None:
    url, _ = _urls(streams)
    key = new_key()
    client = sdk(url, key)
    live = all_events(client.interactions.create(model="echo", input="alpha beta gamma", stream=True))
    assert isinstance(live[0], InteractionCreatedEvent)
    interaction_id = live[0].interaction.id
    assert interaction_id
    with sync_redis.Redis.from_url(streams.redis_url) as redis:
        assert redis.delete(f"ix:{{{tenant_of(key)}}}:{interaction_id}:ev") == 1  # as if expired
    replayed = all_events(client.interactions.get(interaction_id, stream=True))
    # the record keeps a step's text whole, so its replay carries it in one delta
    assert _collapsed([e.event_type for e in replayed]) == _collapsed([e.event_type for e in live])
    assert isinstance(replayed[-1], InteractionCompletedEvent)
    assert replayed[-1].interaction.status == "completed"
    assert streamed_text(replayed) == "alpha beta gamma"
    resumed = all_events(
        client.interactions.get(interaction_id, stream=True, last_event_id=event_id_of(replayed[3]))
    )
    assert [event_id_of(e) for e in resumed] == [event_id_of(e) for e in replayed[4:]]
    # an id from the expired log names nothing in the rebuilt replay
    expired = event_id_of(live[3])
    with pytest.raises(BadRequestError) as caught:
        all_events(client.interactions.get(interaction_id, stream=True, last_event_id=expired))
    assert "expired" in str(caught.value)


def _collapsed(kinds: list[str]) -> list[str]:
    return [k for i, k in enumerate(kinds) if not (k == "step.delta" and i and kinds[i - 1] == k)]


def test_a_non_streamed_interaction_can_be_streamed_afterwards(beta: genai.Client) -> None:
    reply = interaction(beta.interactions.create(model="echo", input="one two"))
    replayed = all_events(beta.interactions.get(id_of(reply), stream=True))
    assert isinstance(replayed[-1], InteractionCompletedEvent)  # event_type "interaction.completed"
    steps = replayed[-1].interaction.steps
    assert steps and text_of_step(steps[0]) == "one two"


def test_unknown_last_event_id_is_400(http: httpx.Client) -> None:
    created = http.post("/v1beta/interactions", json={"model": "echo", "input": "x", "stream": True})
    interaction_id = next(events(created))["interaction"]["id"]
    for bad in ("evt_9999", "nonsense"):
        response = http.get(
            f"/v1beta/interactions/{interaction_id}", params={"stream": "true", "last_event_id": bad}
        )
        assert response.status_code == 400
        assert "last_event_id" in response.json()["error"]["message"]


def test_keepalive_comments_while_nothing_happens(streams: Stack) -> None:
    url, _ = _urls(streams)
    key = new_key()
    with httpx.Client(base_url=url, headers={"x-goog-api-key": key}, timeout=30) as http:
        # a foreground call of echo-slow with a long pause: nothing is produced for a while
        streams.stop_workers()
        try:
            reply = http.post(
                "/v1beta/interactions", json={"model": "echo", "input": "later", "background": True}
            ).json()
            started = time.monotonic()
            with http.stream(
                "GET", f"/v1beta/interactions/{reply['id']}", params={"stream": "true"}
            ) as response:
                for line in response.iter_lines():
                    if line.startswith(":"):
                        break
            assert time.monotonic() - started < 5
        finally:
            streams.start_worker()
        done = until(
            lambda: (
                http.get(f"/v1beta/interactions/{reply['id']}", params={"stream": "false"}).json()["status"]
                == "completed"
            ),
            timeout=10,
        )
        assert done
