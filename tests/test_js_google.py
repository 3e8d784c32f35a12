"""The official @google/genai JS SDK (tests/js/, run by tests/js_sdk.py) against the shared in-process server,
with the server's root as its `httpOptions.baseUrl`: an interaction created and read back, with the SDK's
retries off (`maxRetries: 0`, per request, as its interactions client takes them) and with its default
retries; the record is the one the Python SDK reads."""

from __future__ import annotations

import pytest

from . import js_sdk
from .support import sdk


@pytest.mark.parametrize("retries", [0, None])
def test_an_interaction_created_and_read_back(base_url: str, api_key: str, retries: int | None) -> None:
    settings = {"baseUrl": base_url, "apiKey": api_key, "maxRetries": retries}
    answer = js_sdk.run("google_interactions.mjs", {**settings, "model": "echo", "input": "hi js"})
    assert "thrown" not in answer, answer
    created, got = answer["created"], answer["got"]
    # the paths the SDK calls by default: the `/v1` ones, next to which OpenAI's are served
    assert answer["sent"] == ["POST /v1/interactions", f"GET /v1/interactions/{created['id']}"]
    assert (created["status"], created["model"]) == ("completed", "echo")
    # the SDK's own join of the output's text
    assert created["output_text"] == got["output_text"] == "hi js"
    assert got["id"] == created["id"]
    assert [step["type"] for step in got["steps"]] == ["user_input", "model_output"]
    stored = sdk(base_url, api_key).interactions.get(created["id"])
    assert stored.id == created["id"] and stored.status == "completed"


@pytest.mark.parametrize("retries", [0, None])
def test_generate_content_stream_count_and_chat(base_url: str, api_key: str, retries: int | None) -> None:
    """models.generateContent, generateContentStream and countTokens, and a chat of two turns, on the
    SDK's default `/v1` (beside OpenAI's routes there)."""
    settings = {"baseUrl": base_url, "apiKey": api_key, "retries": retries}
    answer = js_sdk.run("google_generate.mjs", {**settings, "model": "echo", "contents": "hello js world"})
    assert "thrown" not in answer, answer
    assert answer["text"] == "hello js world" and answer["finish"] == "STOP"
    assert answer["usage"]["promptTokenCount"] == 3 and answer["usage"]["totalTokenCount"] == 6
    assert "".join(chunk["text"] for chunk in answer["chunks"]) == "hello js world"
    assert answer["chunks"][-1]["finish"] == "STOP"
    assert answer["totalTokens"] == 3
    assert answer["turns"] == ["first", "second turn"] and answer["history"] == ["user", "model"] * 2
    assert answer["sent"][:3] == [
        "POST /v1/models/echo:generateContent",
        "POST /v1/models/echo:streamGenerateContent",
        "POST /v1/models/echo:countTokens",
    ]
