"""A Responses stream cut and resumed from another web process (a stack of two web processes and a worker
on one Redis, tests/support.py), as the openai SDK resumes: `retrieve(id, stream=True, starting_after=N)`
and `client.responses.stream(response_id=..., starting_after=N)`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from openai import OpenAI
from openai.types.responses import ResponseStreamEvent

from ..support import Stack, new_key, running_stack
from .conftest import openai_base
from .stream_checks import checked, get_stream, text_of

SENTENCE = " ".join(f"s{i}" for i in range(30))  # 1.5 s of echo-slow


@pytest.fixture(scope="module")
def webs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(Path(tmp_path_factory.mktemp("response-streams")), servers=2, workers=1) as stack:
        yield stack


def _client(url: str, key: str) -> OpenAI:
    return OpenAI(base_url=openai_base(url), api_key=key, max_retries=0)


def _dumped(events: list[ResponseStreamEvent]) -> list[dict[str, Any]]:
    return [event.model_dump(mode="json") for event in events]


def test_a_cut_stream_resumes_from_another_process_without_gap_or_duplicate(webs: Stack) -> None:
    (_, first), (_, second) = webs.servers
    key = new_key()
    with _client(first, key) as one, _client(second, key) as two:
        seen: list[ResponseStreamEvent] = []
        stream = one.responses.create(model="echo-slow", input=SENTENCE, background=True, stream=True)
        for event in stream:
            seen.append(event)
            if len(seen) == 12:
                break
        stream.close()  # the connection dropped mid-run
        response_id = seen[0].response.id  # type: ignore[union-attr]
        cursor = seen[-1].sequence_number
        resumed = list(two.responses.retrieve(response_id, stream=True, starting_after=cursor))
        assert resumed[0].sequence_number == cursor + 1
        assert resumed[-1].type == "response.completed"
        full = list(two.responses.retrieve(response_id, stream=True))
        assert _dumped(seen + resumed) == _dumped(full)
        # the SDK's helper replays from the start and drops what the client had
        with two.responses.stream(response_id=response_id, starting_after=cursor) as helper:
            again = list(helper)
            final = helper.get_final_response()
        assert [event.sequence_number for event in again] == [event.sequence_number for event in resumed]
        assert final.output_text == SENTENCE
    whole = checked(_raw(second, key, response_id))
    assert text_of(whole) == SENTENCE


def test_a_resume_while_the_run_goes_on_follows_it_to_its_end(webs: Stack) -> None:
    (_, first), (_, second) = webs.servers
    key = new_key()
    with _client(first, key) as one:
        created = one.responses.create(model="echo-slow", input=SENTENCE, background=True)
    assert created.status == "queued"
    live = get_stream(first, key, created.id, starting_after=5)
    assert live.events[0]["sequence_number"] == 6 and live.done
    full = checked(_raw(second, key, created.id))
    assert live.events == full.events[6:]


def _raw(url: str, key: str, response_id: str) -> bytes:
    with httpx.Client(headers={"authorization": f"Bearer {key}"}, timeout=30) as http:
        response = http.get(f"{url}/v1/responses/{response_id}", params={"stream": "true"})
    assert response.status_code == 200, response.text
    return response.content
