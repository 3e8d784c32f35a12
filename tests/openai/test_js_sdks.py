"""The official openai JS SDK (tests/js/, run by tests/js_sdk.py) against the shared in-process server, with
the base URL the README gives it (`<server>/v1`): its models list and retrieve, and a Responses create and
retrieve, each with the SDK's retries off (`maxRetries: 0`) and with its default retries."""

from __future__ import annotations

from typing import Any

import pytest

from .. import js_sdk

#: the SDK's retries off, then its default
RETRIES = [0, None]
MODEL_KEYS = {"id", "object", "created", "owned_by"}


def _settings(base_url: str, api_key: str, retries: int | None, **more: Any) -> dict[str, Any]:
    return {"baseURL": f"{base_url}/v1", "apiKey": api_key, "maxRetries": retries, **more}


@pytest.mark.parametrize("retries", RETRIES)
def test_the_models_list_and_one_model(base_url: str, api_key: str, retries: int | None) -> None:
    answer = js_sdk.run("openai_models.mjs", _settings(base_url, api_key, retries, ids=["echo", "nope"]))
    assert answer["sent"] == ["GET /v1/models", "GET /v1/models/echo", "GET /v1/models/nope"]
    assert [model["id"] for model in answer["listed"]] == ["echo", "echo-slow"]
    assert all(set(model) == MODEL_KEYS and model["object"] == "model" for model in answer["listed"])
    echo, missing = answer["retrieved"]
    assert echo == {"id": "echo", "object": "model", "created": 0, "owned_by": "echo"}
    thrown = missing["thrown"]
    assert (thrown["name"], thrown["status"]) == ("NotFoundError", 404), thrown
    assert thrown["error"]["code"] == "model_not_found" and thrown["error"]["param"] == "model"


@pytest.mark.parametrize("retries", RETRIES)
def test_a_responses_create_and_retrieve(base_url: str, api_key: str, retries: int | None) -> None:
    settings = _settings(base_url, api_key, retries, model="echo", input="hi")
    answer = js_sdk.run("openai_responses.mjs", settings)
    assert "thrown" not in answer, answer
    created, retrieved = answer["created"], answer["retrieved"]
    assert answer["sent"] == ["POST /v1/responses", f"GET /v1/responses/{created['id']}"]
    assert (created["object"], created["status"], created["model"]) == ("response", "completed", "echo")
    # the SDK's own join of the output's text parts: the echo model says the input back
    assert answer["output_text"] == "hi"
    messages = [item for item in created["output"] if item["type"] == "message"]
    assert [part["type"] for part in messages[0]["content"]] == ["output_text"]
    assert retrieved["id"] == created["id"] and retrieved["output"] == created["output"]
