"""generateContent through each provider's fake upstream (tests/fakes: Gemini, OpenAI, Anthropic; the
routes of tests/test_upstreams_api.py, on the app in this process): each backend's answer as Gemini's, what
each upstream was sent, a thought signature that comes back unchanged, a response schema and an inline image
reaching the model, a built-in tool refused by a backend that cannot run it, safety settings a backend
cannot apply said in a warning, countTokens as our estimate, an upstream failure seen with the SDK's retries
off and retried with them on (nothing is stored either way), and a stream the client cuts closing the
upstream call."""

from __future__ import annotations

import base64
import time

import httpx
import pytest
from google import genai
from google.genai import errors, types
from pydantic import BaseModel

from tests.fakes import anthropic as an
from tests.fakes import gemini as gm
from tests.fakes import openai as oa
from tests.fakes.http import Script, json_error

from ..inproc import ThreadedApp
from ..support import sdk, tls_context
from ..test_upstreams_api import MODEL, Upstreams, e2e_app, fresh, upstreams, words_script
from ..waiting import until

__all__ = ["e2e_app", "fresh", "upstreams"]  # the borrowed fixtures (fresh: each test's fakes cleared)

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(32))).decode()
TEXT_SCRIPTS = {
    "gemini": lambda: gm.gemini_text_script("Hello from upstream"),
    "openai": lambda: oa.openai_text_script("Hello from upstream"),
    "anthropic": lambda: an.anthropic_text_script("Hello from upstream"),
}


@pytest.fixture
def url(e2e_app: ThreadedApp) -> str:
    return e2e_app.url


def client(url: str, api_key: str, retries: int = 1) -> genai.Client:
    """The SDK without retries, or with `retries` attempts (its default codes: 408, 429, 5xx)."""
    if retries == 1:
        return sdk(url, api_key)
    options = types.HttpOptions(
        base_url=url,
        api_version="v1beta",
        retry_options=types.HttpRetryOptions(attempts=retries, initial_delay=0.05, max_delay=0.2),
        client_args={"verify": tls_context()},
    )
    return genai.Client(api_key=api_key, http_options=options)


@pytest.mark.parametrize("backend", ["gemini", "openai", "anthropic"])
def test_each_backends_answer_is_geminis(url: str, api_key: str, upstreams: Upstreams, backend: str) -> None:
    upstreams[backend].add(TEXT_SCRIPTS[backend]())
    done = client(url, api_key).models.generate_content(
        model=MODEL[backend],
        contents="Say hello",
        config=types.GenerateContentConfig(
            system_instruction="Be kind.", temperature=0.5, max_output_tokens=64
        ),
    )
    assert done.text == "Hello from upstream"
    assert done.candidates and done.candidates[0].finish_reason == types.FinishReason.STOP
    assert done.usage_metadata is not None and done.usage_metadata.total_token_count
    [sent] = upstreams[backend].requests
    body = sent.json()
    if backend == "gemini":
        assert body["contents"] == [{"role": "user", "parts": [{"text": "Say hello"}]}]
        assert body["systemInstruction"] == {"parts": [{"text": "Be kind."}]}
        assert body["generationConfig"]["maxOutputTokens"] == 64
    elif backend == "openai":
        assert body["messages"][0] == {"role": "system", "content": "Be kind."}
        # the local servers' name (this route's base URL is no OpenAI's)
        assert body.get("max_completion_tokens", body.get("max_tokens")) == 64
    else:
        system = body["system"]
        assert (system if isinstance(system, str) else system[0]["text"]) == "Be kind."
        assert body["max_tokens"] == 64


def test_a_thought_signature_comes_back_to_gemini_unchanged(
    url: str, api_key: str, upstreams: Upstreams
) -> None:
    upstreams.gemini.add(gm.gemini_thought_script(thought="Think.", text="42", signature="c2lnLWdlbWluaQ=="))
    ai = client(url, api_key)
    model = MODEL["gemini"]
    asked = types.Content(role="user", parts=[types.Part(text="The answer?")])
    first = ai.models.generate_content(model=model, contents=[asked])
    assert first.text == "42"
    answer = (first.candidates or [])[0].content
    assert answer is not None and any(part.thought_signature for part in answer.parts or [])
    upstreams.gemini.add(gm.gemini_text_script("Sure"))
    again = types.Content(role="user", parts=[types.Part(text="Sure?")])
    ai.models.generate_content(model=model, contents=[asked, answer, again])
    replayed = upstreams.gemini.requests[-1].json()["contents"][1]
    assert replayed["role"] == "model"
    assert any(part.get("thoughtSignature") == "c2lnLWdlbWluaQ==" for part in replayed["parts"]), replayed


def test_a_streamed_thought_keeps_its_summary_and_its_signature(
    url: str, api_key: str, upstreams: Upstreams
) -> None:
    upstreams.gemini.add(gm.gemini_thought_script(thought="Think.", text="42", signature="c2lnLWdlbWluaQ=="))
    chunks = list(client(url, api_key).models.generate_content_stream(model=MODEL["gemini"], contents="?"))
    parts = [part for chunk in chunks for part in (chunk.candidates or [])[0].content.parts or []]  # type: ignore[union-attr]
    assert [part.text for part in parts if part.thought] == ["Think."]
    assert "".join(part.text or "" for part in parts if not part.thought) == "42"
    signed = [part.thought_signature for part in parts if part.thought_signature]
    assert len(signed) == 1 and signed[0]


class City(BaseModel):
    name: str
    population: int


def test_a_schema_and_an_image_reach_the_model(url: str, api_key: str, upstreams: Upstreams) -> None:
    upstreams.openai.add(oa.openai_text_script('{"name": "Paris", "population": 2}'))
    image = types.Part.from_bytes(data=base64.b64decode(PNG), mime_type="image/png")
    done = client(url, api_key).models.generate_content(
        model=MODEL["openai"],
        contents=[types.Content(role="user", parts=[types.Part(text="Which city?"), image])],
        config=types.GenerateContentConfig(response_mime_type="application/json", response_schema=City),
    )
    assert isinstance(done.parsed, City) and done.parsed.name == "Paris"
    body = upstreams.openai.requests[-1].json()
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["type"] == "object" and set(schema["properties"]) == {"name", "population"}
    assert schema["properties"]["population"]["type"] == "integer"
    parts = body["messages"][-1]["content"]
    assert parts[0] == {"type": "text", "text": "Which city?"}
    assert parts[1]["image_url"]["url"] == f"data:image/png;base64,{PNG}"


def test_a_built_in_tool_is_refused_where_the_backend_cannot_run_it(
    url: str, api_key: str, upstreams: Upstreams
) -> None:
    with pytest.raises(errors.ClientError) as refused:
        client(url, api_key).models.generate_content(
            model=MODEL["openai"],
            contents="Search",
            config=types.GenerateContentConfig(tools=[types.Tool(google_search=types.GoogleSearch())]),
        )
    assert refused.value.code == 400
    assert "google_search" in str(refused.value) and "tools[0]" in str(refused.value)
    assert not upstreams.openai.requests


def test_safety_settings_a_backend_cannot_apply_are_a_warning(
    url: str, api_key: str, upstreams: Upstreams
) -> None:
    body = {
        "contents": [{"parts": [{"text": "hi"}]}],
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
    }
    headers = {"x-goog-api-key": api_key}
    for backend, warned in (("openai", True), ("gemini", False)):
        upstreams[backend].add(TEXT_SCRIPTS[backend]())
        path = f"/v1beta/models/{MODEL[backend]}:generateContent"
        reply = httpx.post(url + path, json=body, headers=headers, timeout=30)
        assert reply.status_code == 200, reply.text
        assert ("safetySettings" in reply.headers.get("x-ix-warnings", "")) is warned
    sent = upstreams.gemini.requests[-1].json()
    assert sent["safetySettings"] == [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}]


def test_count_tokens_elsewhere_is_our_estimate_said_as_one(
    url: str, api_key: str, upstreams: Upstreams
) -> None:
    counted = client(url, api_key).models.count_tokens(model=MODEL["openai"], contents="abcdefgh" * 5)
    assert counted.total_tokens == 10
    assert counted.sdk_http_response is not None
    assert "estimate" in (counted.sdk_http_response.headers or {}).get("x-ix-warnings", "")
    assert not upstreams.openai.requests


def test_count_tokens_on_gemini_is_geminis_own(url: str, api_key: str, upstreams: Upstreams) -> None:
    """The SDK's count, and a whole generateContentRequest (its system instruction counts too), which
    Google's REST API takes and the SDK sends only to Vertex."""
    model = MODEL["gemini"]
    upstreams.gemini.add(json_error(200, {"totalTokens": 42}), json_error(200, {"totalTokens": 45}))
    counted = client(url, api_key).models.count_tokens(model=model, contents="count these")
    assert counted.total_tokens == 42
    assert counted.sdk_http_response is not None
    assert "x-ix-warnings" not in (counted.sdk_http_response.headers or {})
    whole = {
        "generateContentRequest": {
            "model": f"models/{model}",
            "contents": [{"role": "user", "parts": [{"text": "count these"}]}],
            "systemInstruction": {"parts": [{"text": "Be kind."}]},
        }
    }
    reply = httpx.post(
        f"{url}/v1beta/models/{model}:countTokens",
        json=whole,
        headers={"x-goog-api-key": api_key},
        timeout=30,
    )
    assert reply.status_code == 200 and reply.json() == {"totalTokens": 45}
    first, second = upstreams.gemini.requests
    assert first.path.endswith(f"/models/{model}:countTokens")
    for sent in (first, second):
        inner = sent.json()["generateContentRequest"]
        assert inner["model"] == f"models/{model}"
        assert inner["contents"] == [{"role": "user", "parts": [{"text": "count these"}]}]
    assert second.json()["generateContentRequest"]["systemInstruction"] == {"parts": [{"text": "Be kind."}]}


def test_count_tokens_on_anthropic_is_anthropics_own(url: str, api_key: str, upstreams: Upstreams) -> None:
    """Anthropic's count endpoint, given the turn's messages and system prompt (a generateContentRequest's,
    which the SDK sends only to Vertex), and none of what it refuses there (max_tokens, stream, sampling)."""
    model = MODEL["anthropic"]
    upstreams.anthropic.add(json_error(200, {"input_tokens": 37}), json_error(200, {"input_tokens": 41}))
    counted = client(url, api_key).models.count_tokens(model=model, contents="count these")
    assert counted.total_tokens == 37
    assert counted.sdk_http_response is not None
    assert "x-ix-warnings" not in (counted.sdk_http_response.headers or {})
    whole = {
        "generateContentRequest": {
            "contents": [{"role": "user", "parts": [{"text": "count these"}]}],
            "systemInstruction": {"parts": [{"text": "Be kind."}]},
        }
    }
    path = f"{url}/v1beta/models/{model}:countTokens"
    reply = httpx.post(path, json=whole, headers={"x-goog-api-key": api_key}, timeout=30)
    assert reply.status_code == 200 and reply.json() == {"totalTokens": 41}
    first, second = upstreams.anthropic.requests
    assert first.path == second.path == "/v1/messages/count_tokens"
    assert first.headers["anthropic-version"] and first.headers["x-api-key"] == "anthropic-secret-e2e"
    messages = [{"role": "user", "content": [{"type": "text", "text": "count these"}]}]
    assert first.json() == {"model": model, "messages": messages}
    assert second.json() == {"model": model, "messages": messages, "system": "Be kind."}


def _failing_then_text() -> list[Script]:
    return [gm.gemini_error(503, "The model is overloaded.", "UNAVAILABLE"), gm.gemini_text_script("At last")]


def test_an_upstream_failure_is_seen_without_retries_and_retried_with_them(
    url: str, api_key: str, upstreams: Upstreams
) -> None:
    upstreams.gemini.add(*_failing_then_text())
    with pytest.raises(errors.ServerError) as failed:
        client(url, api_key).models.generate_content(model=MODEL["gemini"], contents="hi")
    # as for a store=false interaction: the backend failed before any output (api/errors.py), a 502 that
    # the SDK's retries take as they take a 503
    assert failed.value.code == 502 and "overloaded" in str(failed.value)
    assert len(upstreams.gemini.requests) == 1
    upstreams.reset()
    upstreams.gemini.add(*_failing_then_text())
    retrying = client(url, api_key, retries=3)  # held: a client that is collected closes its connections
    done = retrying.models.generate_content(model=MODEL["gemini"], contents="hi")
    retrying.close()
    assert done.text == "At last"
    assert len(upstreams.gemini.requests) == 2
    # stateless: neither the failed turn nor the retried one is kept
    listed = httpx.get(f"{url}/v1beta/interactions", headers={"x-goog-api-key": api_key}, timeout=30)
    assert listed.status_code == 200 and listed.json().get("interactions", []) == []


def test_a_stream_cut_by_the_client_closes_the_upstream_call(
    url: str, api_key: str, upstreams: Upstreams
) -> None:
    fake = upstreams.gemini
    fake.add(words_script("gemini", 200, 0.05))
    stream = client(url, api_key).models.generate_content_stream(model=MODEL["gemini"], contents="go")
    first = next(iter(stream))
    assert first.text
    stream.close()  # type: ignore[attr-defined]
    cut = time.monotonic()
    until(lambda: fake.disconnects, timeout=5)
    closed = (fake.disconnects[0] - cut) * 1000
    print(f"\nstream cut by the client -> upstream connection closed: {closed:.0f} ms")
