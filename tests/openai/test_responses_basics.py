"""The Responses API through the official openai SDK on the app in this process: create (a string, items),
get, the settings a Response echoes, input items and their pages, OpenAI's errors."""

from __future__ import annotations

import base64
import re
from typing import Any

import httpx
import pytest
from openai import BadRequestError, NotFoundError, OpenAI
from openai.types.responses import ResponseOutputMessage

from server.api.openai import chat as openai_chat
from server.api.openai import chat_stored as openai_chat_stored
from server.api.openai import responses as openai_responses

from ..replies import id_of, interaction
from ..support import sdk
from .checks import create, retrieve, valid
from .conftest import openai_base

PNG = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(32))).decode()


def test_create_with_a_string_input_and_get_it(oai: OpenAI) -> None:
    raw = oai.responses.with_raw_response.create(model="echo", input="Hello there", instructions="Be terse.")
    assert valid(raw.http_response.content)["store"] is True
    response = raw.parse()
    assert response.status == "completed"
    assert response.object == "response"
    assert response.output_text == "Hello there"
    assert response.instructions == "Be terse."
    assert response.model == "echo"
    assert response.background is False
    message = response.output[0]
    assert isinstance(message, ResponseOutputMessage)
    assert message.id == f"msg_{response.id}_0" and message.status == "completed"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (
        2,
        2,
        4,
    )
    assert response.completed_at is not None and response.completed_at >= response.created_at
    got = retrieve(oai, response.id)
    assert got.output_text == "Hello there"
    # the same items, under the same ids
    assert [item.id for item in got.output] == [item.id for item in response.output]


def test_create_with_items(oai: OpenAI) -> None:
    response = create(
        oai,
        model="echo",
        instructions="Be terse.",
        input=[
            {"role": "developer", "content": "Answer in English."},
            {"role": "user", "content": "What is two and two?"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Four."}]},
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "And this picture?"},
                    {"type": "input_image", "image_url": PNG, "detail": "low"},
                    {"type": "input_image", "image_url": "https://example.com/cat.png"},
                ],
            },
        ],
    )
    assert response.output_text == "And this picture?"
    # the developer message joins the instructions: our upstreams take one system text
    assert response.instructions == "Be terse.\n\nAnswer in English."
    listed = oai.responses.input_items.list(response.id, order="asc")
    assert [(item.type, getattr(item, "role", None)) for item in listed.data] == [
        ("message", "user"),
        ("message", "assistant"),
        ("message", "user"),
    ]
    parts = listed.data[2].model_dump(exclude_none=True)["content"]
    assert parts[1] == {"type": "input_image", "image_url": PNG, "detail": "low"}
    assert parts[2]["image_url"] == "https://example.com/cat.png"


def test_settings_are_echoed(oai: OpenAI) -> None:
    response = create(
        oai,
        model="echo",
        input="one two three",
        temperature=0.25,
        top_p=0.5,
        max_output_tokens=2,
        metadata={"team": "search"},
        user="end-user-1",
        text={"format": {"type": "json_schema", "name": "answer", "schema": {"type": "object"}}},
        truncation="auto",
    )
    # echo stops at max_output_tokens words
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    assert (response.temperature, response.top_p, response.max_output_tokens) == (0.25, 0.5, 2)
    assert response.metadata == {"team": "search"}
    assert response.user == "end-user-1"
    assert response.text is not None and response.text.format is not None
    assert response.text.format.type == "json_schema"
    # this server never drops input: `auto` runs as `disabled`, and the Response says so
    assert response.truncation == "disabled"


def test_input_items_pages_in_both_orders(oai: OpenAI) -> None:
    turns = [{"role": "user", "content": f"turn {n}"} for n in range(5)]
    response = create(oai, model="echo", input=turns)
    ids = [f"msg_{response.id}_in{n}" for n in range(5)]
    newest = oai.responses.input_items.with_raw_response.list(response.id).http_response.json()
    assert [item["id"] for item in newest["data"]] == ids[::-1]
    assert (newest["first_id"], newest["last_id"], newest["has_more"]) == (ids[4], ids[0], False)
    first = oai.responses.input_items.list(response.id, order="asc", limit=2)
    assert [item.id for item in first.data] == ids[:2] and first.has_more is True
    second = oai.responses.input_items.list(response.id, order="asc", limit=2, after=ids[1])
    assert [item.id for item in second.data] == ids[2:4] and second.has_more is True
    back = oai.responses.input_items.list(response.id, order="desc", limit=2, after=ids[3])
    assert [item.id for item in back.data] == [ids[2], ids[1]]
    # the SDK's auto-paging follows `last_id` to the end
    assert [item.id for item in oai.responses.input_items.list(response.id, order="asc", limit=2)] == ids
    with pytest.raises(BadRequestError) as caught:
        oai.responses.input_items.list(response.id, limit=101)
    assert caught.value.param == "limit"


def test_unknown_response_is_openais_not_found(oai: OpenAI) -> None:
    with pytest.raises(NotFoundError) as caught:
        oai.responses.retrieve("v1_doesnotexist")
    assert caught.value.body == {
        "message": "Response with id 'v1_doesnotexist' not found.",
        "type": "invalid_request_error",
        "param": "response_id",
        "code": None,
    }
    with pytest.raises(NotFoundError) as continued:
        oai.responses.create(model="echo", input="x", previous_response_id="v1_doesnotexist")
    assert continued.value.param == "previous_response_id"


@pytest.mark.parametrize(
    ("params", "param"),
    [
        ({"tools": [{"type": "web_search"}]}, "tools[0].type"),
        ({"include": ["file_search_call.results"]}, "include[0]"),
        ({"max_tool_calls": 3}, "max_tool_calls"),
        ({"conversation": "conv_1"}, "conversation"),
        ({"parallel_tool_calls": False}, "parallel_tool_calls"),
        ({"reasoning": {"effort": "none"}}, "reasoning.effort"),
        ({"metadata": {f"k{n}": "v" for n in range(17)}}, "metadata"),
        ({"metadata": {"k": "v" * 513}}, "metadata.k"),
        ({"input": [{"type": "input_image", "file_id": "file_1"}]}, "input[0].type"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "file_1"}]}]},
            "input[0].content[0].file_id",
        ),
        (
            {"tools": [{"type": "mcp", "server_label": "x", "server_url": "https://x.test/mcp"}]},
            "tools[0].require_approval",
        ),
        ({"store": False, "background": True}, "background"),
    ],
)
def test_what_is_not_served_is_a_400_naming_it(oai: OpenAI, params: dict[str, object], param: str) -> None:
    body = {"model": "echo", "input": "x", **params}
    with pytest.raises(BadRequestError) as caught:
        oai.responses.create(**body)  # type: ignore[call-overload]
    assert caught.value.param == param, caught.value.body
    assert caught.value.body["type"] == "invalid_request_error"  # type: ignore[index]


def test_unknown_fields_are_warnings_of_the_create(oai: OpenAI) -> None:
    """As Google's dialect answers them (http.strict_unknown_fields off): `warnings`, our extension, on the
    create's reply; a get shows none, as Google's get shows none."""
    params: dict[str, Any] = {"text": {"format": {"type": "text", "x": 1}}, "extra_body": {"future_field": 1}}
    raw = oai.responses.with_raw_response.create(model="echo", input="hi", **params)
    body = valid(raw.http_response.content)
    assert body["warnings"] == ["Unknown field ignored: future_field", "Unknown field ignored: text.format.x"]
    assert "warnings" not in valid(oai.responses.with_raw_response.retrieve(body["id"]).http_response.content)


def test_a_missing_key_is_told_to_send_a_bearer_token(base_url: str) -> None:
    reply = httpx.post(f"{openai_base(base_url)}/responses", json={"model": "echo", "input": "x"})
    assert reply.status_code == 401
    error = reply.json()["error"]
    assert "Authorization: Bearer" in error["message"]
    assert (error["type"], error["code"]) == ("authentication_error", "invalid_api_key")
    google = httpx.post(f"{base_url}/v1beta/interactions", json={"model": "echo", "input": "x"})
    assert "x-goog-api-key" in google.json()["error"]["message"]


def test_the_second_base_serves_the_same_responses(oai: OpenAI, base_url: str, api_key: str) -> None:
    response = create(oai, model="echo", input="either base")
    with OpenAI(base_url=f"{base_url}/openai/v1", api_key=api_key, max_retries=0) as other:
        assert retrieve(other, response.id).output_text == "either base"


def _versioned_routes() -> list[tuple[str, str]]:
    """(method, path) of every OpenAI route under the `/{version}` base, as declared."""
    handlers = [*openai_responses.HANDLERS, *openai_chat.HANDLERS, *openai_chat_stored.HANDLERS]
    routes: list[tuple[str, str]] = []
    for handler in handlers:
        for path in sorted(handler.paths):
            if path.startswith("/{version:str}/"):
                routes += [(method, path) for method in sorted(handler.http_methods)]
    return routes


@pytest.mark.parametrize(("method", "path"), _versioned_routes())
def test_openais_routes_answer_no_other_version(oai: OpenAI, base_url: str, method: str, path: str) -> None:
    """Each handler refuses a version other than `v1` before it reads its body or its key (paths.state_of):
    a 404 in OpenAI's envelope, for a stored response or completion that `v1` would have served."""
    chat = "/chat/" in path
    if chat:
        made = oai.chat.completions.create(
            model="echo", messages=[{"role": "user", "content": "kept"}], store=True
        ).id
    else:
        made = create(oai, model="echo", input="kept").id
    filled = re.sub(r"\{\w+:\w+\}", made, path.replace("{version:str}", "v1beta", 1))
    headers = {"authorization": f"Bearer {oai.api_key}"}
    reply = httpx.request(method, base_url + filled, headers=headers, json={"model": "echo", "input": "x"})
    assert reply.status_code == 404, reply.text
    assert reply.json()["error"]["type"] == "invalid_request_error"
    kept = oai.chat.completions.retrieve(made).id if chat else retrieve(oai, made).id
    assert kept == made, "nothing was deleted"


def test_googles_v1_routes_stay_served_beside_openais(oai: OpenAI, base_url: str, api_key: str) -> None:
    """OpenAI's `/v1/responses/{id}` and Google's `/{version}/interactions/{id}` on one server: google-genai's
    default `/v1` reaches Google's, and another version segment reaches no response."""
    google = sdk(base_url, api_key, None)
    made = interaction(google.interactions.create(model="echo", input="on v1"))
    assert google.interactions.get(id_of(made)).status == "completed"
    assert retrieve(oai, id_of(made)).output_text == "on v1"
    reply = httpx.get(
        f"{base_url}/v1beta/responses/{made.id}", headers={"authorization": f"Bearer {api_key}"}
    )
    assert reply.status_code == 404
