"""Request ids on the real server (`python -m server`, real HTTP): accepted from `X-Request-Id` when valid,
made otherwise, echoed as `x-request-id` on every kind of answer, named in error bodies (Google's
`google.rpc.RequestInfo` detail) and in the request's access line, and sent upstream with the model call.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.genai._interactions import NotFoundError

from server.api.errors import REQUEST_INFO

from .fakes.http import FakeServer
from .fakes.loop import fake_in_thread
from .fakes.openai import openai_text_script
from .log_lines import access_line
from .replies import id_of, interaction
from .support import TOPOLOGIES, Stack, new_key, running_stack, sdk, tenant_of
from .waiting import until

GENERATED = re.compile(r"[A-Za-z0-9_-]{16}")
CREATE = "/v1beta/interactions"


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeServer]:
    with fake_in_thread(FakeServer()) as fake:
        yield fake


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, upstream: FakeServer) -> Iterator[Stack]:
    models = f'[[models]]\nmatch = "fake-*"\nbackend = "openai"\nbase_url = "{upstream.base_url}/v1"\n'
    with running_stack(
        Path(tmp_path_factory.mktemp("request-ids")),
        models=models,
        env={"LOG_FORMAT": "json"},
        topology=TOPOLOGIES["tcp-embedded"],
    ) as started:
        yield started


@pytest.fixture
def http(stack: Stack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=stack.url, headers={"x-goog-api-key": new_key()}, timeout=30) as client:
        yield client


def test_an_id_is_made_for_a_request_without_one(http: httpx.Client) -> None:
    first = http.post(CREATE, json={"model": "echo", "input": "hi"})
    second = http.post(CREATE, json={"model": "echo", "input": "hi"})
    assert first.status_code == second.status_code == 200
    assert GENERATED.fullmatch(first.headers["x-request-id"]), first.headers
    assert GENERATED.fullmatch(second.headers["x-request-id"])
    assert first.headers["x-request-id"] != second.headers["x-request-id"]


@pytest.mark.parametrize("sent", ["a", "trace-1.2:3_ab", "x" * 128, "0af7651916cd43dd8448eb211c80319c"])
def test_a_valid_incoming_id_is_kept(http: httpx.Client, sent: str) -> None:
    reply = http.post(CREATE, json={"model": "echo", "input": "hi"}, headers={"X-Request-Id": sent})
    assert reply.status_code == 200
    assert reply.headers["x-request-id"] == sent


@pytest.mark.parametrize("sent", ["two words", "x" * 129, "semi;colon", "slash/es", "é", ""])
def test_an_invalid_incoming_id_is_replaced_not_refused(http: httpx.Client, sent: str) -> None:
    """Proxies send odd ids: the request is served, under an id of our own."""
    reply = http.post(
        CREATE, json={"model": "echo", "input": "hi"}, headers=[(b"X-Request-Id", sent.encode("latin-1"))]
    )
    assert reply.status_code == 200, reply.text
    assert GENERATED.fullmatch(reply.headers["x-request-id"]), reply.headers


def answers(http: httpx.Client, headers: dict[str, str]) -> dict[str, httpx.Response]:
    """One of each kind of answer: success, SSE stream, the router's 404 and 405, a handler's 404, a 400,
    a 401, a probe."""
    found = {
        "created": http.post(CREATE, json={"model": "echo", "input": "hi"}, headers=headers),
        "no route": http.get("/nowhere", headers=headers),
        "wrong method": http.put(CREATE, headers=headers),
        "unknown id": http.get(f"{CREATE}/v1_unknown", headers=headers),
        "bad json": http.post(CREATE, content=b'{"model": ', headers=headers),
        "no key": httpx.get(f"{http.base_url}{CREATE}/v1_unknown", headers=headers),
        "probe": http.get("/healthz", headers=headers),
    }
    with http.stream(
        "POST", CREATE, json={"model": "echo", "input": "a b", "stream": True}, headers=headers
    ) as s:
        s.read()
        found["stream"] = s
    return found


def test_every_kind_of_answer_carries_the_id(http: httpx.Client) -> None:
    for kind, reply in answers(http, {"X-Request-Id": "kept-1"}).items():
        assert reply.headers.get("x-request-id") == "kept-1", (kind, reply.status_code, reply.headers)
    for kind, reply in answers(http, {}).items():
        assert GENERATED.fullmatch(reply.headers.get("x-request-id", "")), (kind, reply.headers)
    assert answers(http, {})["stream"].headers["content-type"].startswith("text/event-stream")


def test_an_error_body_names_the_request_in_its_details(http: httpx.Client) -> None:
    reply = http.get(f"{CREATE}/v1_unknown")
    assert reply.status_code == 404
    error = reply.json()["error"]
    assert error["code"] == 404 and error["status"] == "NOT_FOUND" and "v1_unknown" in error["message"]
    assert error["details"] == [{"@type": REQUEST_INFO, "requestId": reply.headers["x-request-id"]}]
    for kind, answer in answers(http, {}).items():
        if answer.status_code >= 400:
            details = answer.json()["error"]["details"]
            assert details == [{"@type": REQUEST_INFO, "requestId": answer.headers["x-request-id"]}], kind


def test_the_access_line_names_the_request(stack: Stack, http: httpx.Client) -> None:
    key = new_key()
    reply = http.get(
        f"{CREATE}/v1_unknown",
        params={"stream": "false", "key": key},
        headers={"x-goog-api-key": key, "X-Request-Id": "line-of-a-404"},
    )
    assert reply.status_code == 404
    line = access_line(stack.servers[0][0], "line-of-a-404")
    assert line["status"] == 404 and line["method"] == "GET"
    assert line["path"] == f"{CREATE}/v1_unknown" and line["query"] == ["stream", "key"]
    assert line["bytes"] == len(reply.content)
    assert line["tenant"] == tenant_of(key) and line["interaction_id"] == "v1_unknown"
    assert key not in str(line)


def test_the_sdk_reads_our_errors_and_answers(stack: Stack) -> None:
    client = sdk(stack.url, new_key())
    made = interaction(client.interactions.create(model="echo", input="Hello there"))
    assert made.status == "completed"
    events = list(client.interactions.create(model="echo", input="one two", stream=True))
    assert events[-1].event_type == "interaction.completed"
    with pytest.raises(NotFoundError) as caught:
        client.interactions.get("v1_unknown")
    body: Any = caught.value.body
    request_id = caught.value.response.headers["x-request-id"]
    assert body["error"]["details"] == [{"@type": REQUEST_INFO, "requestId": request_id}]
    assert caught.value.status_code == 404 and "v1_unknown" in str(caught.value)
    client.interactions.delete(id_of(made))


def test_the_id_is_sent_upstream(http: httpx.Client, upstream: FakeServer) -> None:
    upstream.add(openai_text_script("Hello from upstream"))
    reply = http.post(
        CREATE, json={"model": "fake-model", "input": "hi"}, headers={"X-Request-Id": "to-the-upstream"}
    )
    assert reply.status_code == 200, reply.text
    assert upstream.requests[-1].headers.get("x-request-id") == "to-the-upstream"


def test_a_background_run_carries_the_id_of_the_request_that_queued_it(
    http: httpx.Client, upstream: FakeServer
) -> None:
    """The job runs in the worker, another task and maybe another process: the id goes with the job."""
    upstream.add(openai_text_script("Hello from the worker"))
    body = {"model": "fake-model", "input": "hi", "background": True}
    reply = http.post(CREATE, json=body, headers={"X-Request-Id": "queued-by-me"})
    assert reply.status_code == 200, reply.text
    interaction_id = reply.json()["id"]
    until(lambda: http.get(f"{CREATE}/{interaction_id}").json()["status"] == "completed", timeout=20)
    assert upstream.requests[-1].headers.get("x-request-id") == "queued-by-me"
