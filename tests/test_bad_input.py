"""Bad input against the real server: API-shaped errors naming the field, nothing stored, never a 5xx;
unknown-field warnings; `store=false` writes nothing; routing and query-flag edge cases."""

# The server runs on its own loop in another thread (tests/inproc.py: ThreadedApp): a blocking httpx call
# inside an async test (async only to use the `redis` fixture) blocks nothing that matters.
# ruff: noqa: ASYNC212

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from google import genai
from google.genai import _interactions as sdk_errors
from google.genai.interactions import InteractionCompletedEvent

from server.webhooks.config import NOT_STORED

from .replies import all_events, id_of, interaction, streamed_text
from .support import tenant_keys

PATH = "/v1beta/interactions"
MIB = 1024 * 1024


def assert_error(response: httpx.Response, status: int, *fragments: str) -> str:
    """An API error body `{"error": {"code": <int>, "message": str, "status": str}}`; returns the message."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert list(body) == ["error"], body
    error = body["error"]
    assert type(error.get("code")) is int and error["code"] == status, body
    assert isinstance(error.get("message"), str) and error["message"], body
    assert isinstance(error.get("status"), str) and error["status"], body
    for fragment in fragments:
        assert fragment in error["message"], (fragment, error["message"])
    return str(error["message"])


def post_raw(http: httpx.Client, content: bytes | Iterator[bytes], path: str = PATH) -> httpx.Response:
    return http.post(path, content=content, headers={"content-type": "application/json"})


STEPS_WITH_BAD_MIME_TYPE = [
    {"type": "user_input", "content": [{"type": "text", "text": "a"}]},
    {"type": "model_output", "content": [{"type": "text", "text": "b"}]},
    {"type": "user_input", "content": [{"type": "image", "mime_type": 5, "uri": "https://x/y.png"}]},
]


# (request body, HTTP status, fragments the message must contain)
BAD_CREATES: list[Any] = [
    pytest.param(
        {"model": "echo", "input": STEPS_WITH_BAD_MIME_TYPE},
        400,
        ["`input[2].content[0].mime_type`"],
        id="wrong-type-deep-in-input",
    ),
    pytest.param({"input": "hi"}, 400, ["`model`"], id="model-missing"),
    pytest.param(
        {"model": "echo", "agent": "deep-research", "input": "hi"}, 400, ["`model`", "`agent`"], id="both"
    ),
    pytest.param(
        {"model": "no-such-model", "input": "hi"},
        400,
        ["`model`", "no-such-model", "echo", "echo-slow"],
        id="unknown-model",
    ),
    pytest.param(
        {"agent": "no-such-agent", "input": "hi"},
        400,
        ["`agent`", "no-such-agent", "echo"],
        id="unknown-agent",
    ),
    pytest.param(
        {"model": "echo", "input": "hi", "store": False, "previous_interaction_id": "v1_abc"},
        400,
        ["`previous_interaction_id`", "store"],
        id="store-false-with-previous",
    ),
    pytest.param(
        {"model": "echo", "input": "hi", "store": False, "background": True},
        400,
        ["`background`", "store"],
        id="store-false-with-background",
    ),
    pytest.param({"model": "echo"}, 400, ["`input`"], id="input-missing"),
    pytest.param({"model": "echo", "input": []}, 400, ["`input`"], id="input-empty-list"),
    pytest.param({"model": "echo", "input": ""}, 400, ["`input`"], id="input-empty-string"),
    pytest.param({"model": "echo", "input": None}, 400, ["`input`"], id="input-null"),
    pytest.param(
        {"model": "echo", "input": "hi", "background": True, "agent": "x"}, 400, ["`agent`"], id="bg-both"
    ),
    pytest.param(
        {"model": "echo", "input": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]},
        400,
        ["`input[0].role`"],
        id="legacy-role",
    ),
    pytest.param(
        {
            "model": "echo",
            "input": [{"type": "user_input", "content": "hi"}, {"role": "model", "content": "x"}],
        },
        400,
        ["`input[1].role`"],
        id="legacy-role-second",
    ),
    pytest.param({"model": "echo", "input": 5}, 400, ["`input`"], id="input-number"),
    pytest.param({"model": "echo", "input": [{}]}, 400, ["`input[0].type`"], id="step-without-type"),
    pytest.param(
        {"model": "echo", "input": [{"type": "function_call", "name": "f"}]},
        400,
        ["`input[0]`", "id"],
        id="call-no-id",
    ),
    pytest.param(
        {"model": "echo", "input": "hi", "generation_config": {"temperature": "hot"}},
        400,
        ["`generation_config.temperature`"],
        id="temperature-string",
    ),
    pytest.param(
        {"model": "echo", "input": "hi", "tools": [{"type": "google_search"}, {"type": "function"}]},
        400,
        ["`tools[1]`", "name"],
        id="tool-without-name",
    ),
    pytest.param({"model": "echo", "input": "hi", "store": "no"}, 400, ["`store`"], id="store-string"),
    pytest.param({"model": "echo", "input": "hi", "stream": "yes"}, 400, ["`stream`"], id="stream-string"),
    pytest.param({"model": 5, "input": "hi"}, 400, ["`model`"], id="model-number"),
    pytest.param(
        {"model": "echo", "input": "hi", "previous_interaction_id": "v1_doesnotexist"},
        404,
        ["v1_doesnotexist"],
        id="previous-unknown",
    ),
    pytest.param(
        {"model": "echo", "input": "hi", "previous_interaction_id": "../x?y"},
        404,
        ["../x?y"],
        id="previous-odd",
    ),
    pytest.param(
        {"model": "echo", "input": "hi", "background": True, "previous_interaction_id": "v1_doesnotexist"},
        404,
        ["v1_doesnotexist"],
        id="background-previous-unknown",
    ),
]


@pytest.mark.parametrize(("payload", "status", "fragments"), BAD_CREATES)
async def test_bad_create_is_an_api_error_and_stores_nothing(
    http: httpx.Client,
    redis: aioredis.Redis,
    tenant: str,
    payload: dict[str, Any],
    status: int,
    fragments: list[str],
) -> None:
    response = http.post(PATH, json=payload)
    message = assert_error(response, status, *fragments)
    if status == 400:
        assert response.json()["error"]["status"] == "INVALID_ARGUMENT"
        assert fragments[0].strip("`") in message
    assert await tenant_keys(redis, tenant) == []


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        pytest.param(b'{"model": "echo", "input": ', "JSON", id="truncated"),
        pytest.param(b"", "JSON", id="empty-body"),
        pytest.param(b'{"model": "echo", "input": "hi",}', "JSON", id="trailing-comma"),
        pytest.param(b"{'model': 'echo'}", "JSON", id="single-quotes"),
        pytest.param(b'{"model": "echo", "input": "\xff\xfe"}', "JSON", id="bad-utf8"),
        pytest.param(
            b'{"model": "echo", "input": "x", "generation_config": {"temperature": NaN}}', "JSON", id="nan"
        ),
        pytest.param(b'[{"model": "echo", "input": "hi"}]', "object", id="array-body"),
        pytest.param(b'"hi"', "object", id="string-body"),
        pytest.param(b"null", "object", id="null-body"),
    ],
)
async def test_malformed_or_non_object_body_is_400(
    http: httpx.Client, redis: aioredis.Redis, tenant: str, content: bytes, fragment: str
) -> None:
    response = post_raw(http, content)
    assert_error(response, 400, fragment)
    assert response.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert await tenant_keys(redis, tenant) == []


async def test_body_over_the_limit_is_413(http: httpx.Client, redis: aioredis.Redis, tenant: str) -> None:
    content = b'{"model": "echo", "input": "' + b"a" * (21 * MIB) + b'"}'
    assert_error(post_raw(http, content), 413)
    assert await tenant_keys(redis, tenant) == []


async def test_chunked_body_over_the_limit_is_413(
    http: httpx.Client, redis: aioredis.Redis, tenant: str
) -> None:
    def chunks() -> Iterator[bytes]:
        # no Content-Length: the server must count as it reads
        yield b'{"model": "echo", "input": "'
        for _ in range(21):
            yield b"a" * MIB
        yield b'"}'

    assert_error(post_raw(http, chunks()), 413)
    assert await tenant_keys(redis, tenant) == []


NASTY: list[Any] = [
    pytest.param(
        b'{"model": "echo", "input": "x", "generation_config": {"max_output_tokens": -1}}', id="negative"
    ),
    pytest.param(
        b'{"model": "echo", "input": "x", "generation_config": {"temperature": 1e999}}', id="inf-float"
    ),
    pytest.param(
        b'{"model": "echo", "input": "x", "labels": ' + b"[" * 200 + b"]" * 200 + b"}", id="nest-200"
    ),
    pytest.param(
        b'{"model": "echo", "input": "x", "labels": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        id="nest-5000",
    ),
    pytest.param(
        b'{"model": "echo", "input": "x", '
        b'"generation_config": {"max_output_tokens": 1000000000000000000000000}}',
        id="huge-int-config",
    ),
    pytest.param(
        b'{"model": "echo", "input": [{"type": "function_call", "id": "c", "name": "f", '
        b'"arguments": {"n": 1000000000000000000000000}}]}',
        id="huge-int-arguments",
    ),
    pytest.param(b'{"model": "echo", "input": "\\ud800"}', id="lone-surrogate"),
    pytest.param(b'{"model": "echo", "input": "nul \\u0000 byte"}', id="nul-char"),
    pytest.param(
        b'{"model": "echo", "input": [{"type": "user_input", "content": [null]}]}', id="null-content"
    ),
    pytest.param(b'{"model": "echo", "input": [{"type": 5}]}', id="numeric-type"),
    pytest.param(b'{"model": "echo", "input": [[]]}', id="list-in-list"),
    pytest.param(
        b'{"model": "echo", "input": {"type": "user_input", "content": {"a": 1}}}', id="content-object"
    ),
    pytest.param(b'{"model": "echo", "input": "x", "tools": [{"type": null}]}', id="tool-null-type"),
    pytest.param(b'{"model": "echo", "input": "x", "tools": [5]}', id="tool-number"),
    pytest.param(b'{"model": "echo", "input": "x", "response_format": [[[]]]}', id="response-format"),
    pytest.param(b'{"model": "", "input": "x"}', id="empty-model"),
    pytest.param(b'{"model": "echo", "input": "x", "previous_interaction_id": ""}', id="empty-previous"),
    pytest.param(b'{"model": "echo", "input": "x", "previous_interaction_id": 5}', id="numeric-previous"),
    pytest.param(
        b'{"model": "echo", "input": "x", "previous_interaction_id": "' + b"a" * 5000 + b'"}', id="long-prev"
    ),
    pytest.param(b'{"model": "echo", "input": "x", "model": "echo", "model": "nope"}', id="duplicate-keys"),
    pytest.param(b'{"model": "echo", "input": "x", "continuation_token": "ctok_1"}', id="continuation-token"),
    pytest.param(
        b'{"model": "echo", "input": "x", "stream": true, "background": true, "store": false}', id="flags"
    ),
]


@pytest.mark.parametrize("content", NASTY)
def test_no_client_input_produces_a_5xx(http: httpx.Client, content: bytes) -> None:
    response = post_raw(http, content)
    assert response.status_code < 500, response.text
    if response.status_code != 200:
        assert_error(response, response.status_code)


async def test_a_huge_int_is_fine_when_nothing_is_stored(
    http: httpx.Client, redis: aioredis.Redis, tenant: str
) -> None:
    content = (
        b'{"model": "echo", "store": false, "input": "x", '
        b'"generation_config": {"max_output_tokens": 10000000000000000000000}}'
    )
    assert post_raw(http, content).status_code == 200
    assert await tenant_keys(redis, tenant) == []


def test_sdk_unknown_model_is_a_bad_request_listing_the_models(client: genai.Client) -> None:
    with pytest.raises(sdk_errors.BadRequestError) as info:
        client.interactions.create(model="no-such-model", input="hi")
    assert info.value.status_code == 400
    assert "no-such-model" in str(info.value)
    assert "echo" in str(info.value)


def test_sdk_store_false_with_previous_is_a_bad_request(client: genai.Client) -> None:
    with pytest.raises(sdk_errors.BadRequestError) as info:
        client.interactions.create(model="echo", input="hi", store=False, previous_interaction_id="v1_x")
    assert "previous_interaction_id" in str(info.value)


# ---------------------------------------------------------------------------------------------------------
# unknown fields: warnings on the reply


def test_unknown_fields_produce_warnings(http: httpx.Client) -> None:
    payload = {
        "model": "echo",
        "input": [{"type": "user_input", "content": [{"type": "text", "text": "hi", "zzz": 1}], "yyy": 2}],
        "future_field": 1,
        "generation_config": {"temperature": 0.5, "foo": 1},
    }
    response = http.post(PATH, json=payload)
    assert response.status_code == 200, response.text
    reply = response.json()
    assert reply["status"] == "completed"
    assert sorted(reply["warnings"]) == sorted(
        [
            "Unknown field ignored: future_field",
            "Unknown field ignored: input[0].yyy",
            "Unknown field ignored: input[0].content[0].zzz",
            "Unknown field ignored: generation_config.foo",
        ]
    )


def test_no_unknown_fields_no_warnings(http: httpx.Client) -> None:
    reply = http.post(PATH, json={"model": "echo", "input": "hi"}).json()
    assert "warnings" not in reply or not reply["warnings"]


def test_warnings_per_object_limit(http: httpx.Client) -> None:
    payload = {"model": "echo", "input": "hi", **{f"extra_{i}": i for i in range(8)}}
    warnings = http.post(PATH, json=payload).json()["warnings"]
    assert warnings[:5] == [f"Unknown field ignored: extra_{i}" for i in range(5)]
    assert len(warnings) == 6 and warnings[5].startswith("+3 more")


def test_warnings_overall_limit(http: httpx.Client) -> None:
    tools = [{"type": "function", "name": f"f{i}", "unknown": i} for i in range(25)]
    warnings = http.post(PATH, json={"model": "echo", "input": "hi", "tools": tools}).json()["warnings"]
    assert len(warnings) == 20
    assert warnings[0] == "Unknown field ignored: tools[0].unknown"
    assert warnings[-1].startswith("+6 more")


def test_warnings_on_a_background_create_and_a_stateless_one(http: httpx.Client) -> None:
    for extra in ({"background": True}, {"store": False}):
        reply = http.post(PATH, json={"model": "echo", "input": "hi", "future_field": 1, **extra}).json()
        assert reply["warnings"] == ["Unknown field ignored: future_field"], extra


def test_unknown_fields_via_sdk_extra_body(client: genai.Client) -> None:
    reply = interaction(client.interactions.create(model="echo", input="hi", extra_body={"future_field": 1}))
    assert reply.status == "completed"
    assert reply.output_text == "hi"


# ---------------------------------------------------------------------------------------------------------
# store=false writes nothing


async def test_store_false_writes_nothing_and_returns_no_id(
    client: genai.Client, redis: aioredis.Redis, tenant: str
) -> None:
    reply = interaction(client.interactions.create(model="echo", input="Nothing to keep", store=False))
    assert reply.status == "completed"
    assert reply.output_text == "Nothing to keep"
    assert reply.id in ("", None)
    assert await tenant_keys(redis, tenant) == []
    running = await redis.zrange("ix:running", 0, -1)
    assert not [m for m in running if m.startswith(tenant.encode())]


async def test_store_false_stream_writes_nothing(
    client: genai.Client, redis: aioredis.Redis, tenant: str
) -> None:
    events = all_events(
        client.interactions.create(model="echo", input="stream me please", store=False, stream=True)
    )
    kinds = [e.event_type for e in events]
    assert kinds[0] == "interaction.created" and kinds[-1] == "interaction.completed"
    completed = events[-1]
    assert isinstance(completed, InteractionCompletedEvent)
    assert completed.interaction.id in ("", None)
    assert streamed_text(events) == "stream me please"
    assert await tenant_keys(redis, tenant) == []


async def test_store_false_stateless_history(http: httpx.Client, redis: aioredis.Redis, tenant: str) -> None:
    history = [
        {"type": "user_input", "content": [{"type": "text", "text": "What is 2+2?"}]},
        {"type": "thought", "signature": "c2lnLWI=", "summary": [{"type": "text", "text": "adding"}]},
        {"type": "model_output", "content": [{"type": "text", "text": "4"}]},
        {"type": "user_input", "content": [{"type": "text", "text": "Times 3?"}]},
    ]
    response = http.post(PATH, json={"model": "echo", "input": history, "store": False})
    assert response.status_code == 200
    reply = response.json()
    assert not reply.get("id")
    assert reply["steps"][-1]["content"][0]["text"] == "Times 3?"
    assert await tenant_keys(redis, tenant) == []


# ---------------------------------------------------------------------------------------------------------
# routes and query flags


def test_unknown_route_is_404_json(http: httpx.Client) -> None:
    for method, path in [
        ("GET", "/v1beta/nothing"),
        ("GET", "/nothing/at/all"),
        ("GET", "/v1beta/interactions/v1_x/y/z"),
        ("GET", "/v1beta/models/echo:generateContent"),
    ]:
        assert_error(http.request(method, path), 404)
    # a model's method that is not served (api/generate.py serves three) is no route either
    assert "generateContent" in assert_error(http.post("/v1beta/models/echo:embedContent", json={}), 404)
    # a method of HTTP a model's path does not answer: a JSON 405 that says which it does
    refused = http.delete("/v1beta/models/echo")
    assert_error(refused, 405)
    assert "GET" in refused.headers["allow"] and "POST" in refused.headers["allow"]


async def test_bad_version_segment_is_404(http: httpx.Client, redis: aioredis.Redis, tenant: str) -> None:
    created = http.post(PATH, json={"model": "echo", "input": "hi"}).json()
    before = sorted(await tenant_keys(redis, tenant))
    for version in ("v9x", "beta", "V1", "v1gamma", "interactions"):
        assert_error(http.post(f"/{version}/interactions", json={"model": "echo", "input": "hi"}), 404)
        assert_error(http.get(f"/{version}/interactions/{created['id']}", params={"stream": "false"}), 404)
        assert_error(http.delete(f"/{version}/interactions/{created['id']}"), 404)
    assert sorted(await tenant_keys(redis, tenant)) == before
    assert http.get(f"{PATH}/{created['id']}").status_code == 200


def test_bad_id_is_404(http: httpx.Client) -> None:
    for bad in ("v1_doesnotexist", "a.b", "x" * 200, "%20"):
        assert_error(http.get(f"{PATH}/{bad}", params={"stream": "false"}), 404)


def test_get_without_stream_returns_json(http: httpx.Client) -> None:
    created = http.post(PATH, json={"model": "echo", "input": "hi there"}).json()
    response = http.get(f"{PATH}/{created['id']}")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    got = response.json()
    assert got["id"] == created["id"]
    assert [s["type"] for s in got["steps"]] == ["user_input", "model_output"]


def test_get_with_stream_false(http: httpx.Client) -> None:
    created = http.post(PATH, json={"model": "echo", "input": "hi there"}).json()
    for value in ("false", "False", "0"):
        response = http.get(f"{PATH}/{created['id']}", params={"stream": value})
        assert response.status_code == 200, value
        assert response.headers["content-type"].startswith("application/json")
        assert response.json()["id"] == created["id"]


async def test_bad_query_flags_are_400(http: httpx.Client, redis: aioredis.Redis, tenant: str) -> None:
    created = http.post(PATH, json={"model": "echo", "input": "hi"}).json()
    item = f"{PATH}/{created['id']}"
    before = sorted(await tenant_keys(redis, tenant))
    assert_error(http.get(item, params={"stream": "maybe"}), 400, "`stream`")
    assert_error(http.get(item, params={"stream": "yes please"}), 400, "`stream`")
    assert_error(http.get(item, params={"stream": "false", "include_input": "x"}), 400, "`include_input`")
    assert_error(http.get(item, params={"last_event_id": "evt_1"}), 400, "`last_event_id`")
    assert_error(http.get(item, params={"last_event_id": "evt_1", "stream": "false"}), 400, "`last_event_id`")
    assert_error(http.get(item, params={"lastEventId": "evt_1", "stream": "false"}), 400, "last_event_id")
    assert sorted(await tenant_keys(redis, tenant)) == before


def test_sdk_get_sends_stream_false(client: genai.Client) -> None:
    created = interaction(client.interactions.create(model="echo", input="hello"))
    got = client.interactions.get(id_of(created))
    assert got.id == created.id and got.output_text == "hello"


def test_error_bodies_parse_as_json_for_every_verb(http: httpx.Client) -> None:
    for method in ("GET", "DELETE"):
        assert_error(http.request(method, f"{PATH}/v1_missing"), 404, "v1_missing")
    assert_error(http.post(f"{PATH}/v1_missing/cancel"), 404, "v1_missing")
    response = http.put(f"{PATH}/v1_missing")
    assert 400 <= response.status_code < 500
    assert_error(response, response.status_code)


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"uris": ["http://127.0.0.1:9/hook"]}, "webhook_config.uris[0]"),
        ({"uris": ["https://93.184.216.34/a", "http://169.254.169.254/latest"]}, "webhook_config.uris[1]"),
        ({"uris": ["ftp://192.0.2.1/hook"]}, "webhook_config.uris[0]"),
        ({"uris": [f"https://192.0.2.{n}/hook" for n in range(1, 7)]}, "webhook_config.uris"),
        (
            {"uris": ["https://192.0.2.1/hook"], "user_metadata": {"x": "y" * 5000}},
            "webhook_config.user_metadata",
        ),
        ({"uris": "https://192.0.2.1/hook"}, "webhook_config.uris"),
    ],
)
def test_a_webhook_config_it_would_not_deliver_to_is_refused(
    http: httpx.Client, config: dict[str, Any], field: str
) -> None:
    """Private, loopback and metadata targets (the test server allows none), other schemes, and more than
    the bounds allow: a 400 naming the field, before anything is stored."""
    response = http.post(PATH, json={"model": "echo", "input": "hi", "webhook_config": config})
    assert_error(response, 400)
    assert field in response.json()["error"]["message"]


def test_a_webhook_config_with_store_false_is_said_to_be_ignored(http: httpx.Client) -> None:
    config = {"uris": ["http://127.0.0.1:9/hook"]}
    reply = http.post(PATH, json={"model": "echo", "input": "hi", "store": False, "webhook_config": config})
    assert reply.status_code == 200
    assert reply.json()["warnings"] == [NOT_STORED]
