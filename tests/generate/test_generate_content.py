"""Gemini's generateContent dialect through the official google-genai SDK, on each way the README starts
the service (the shared stacks): `generate_content`, `generate_content_stream`, `count_tokens`,
`client.chats` over three turns, automatic function calling, both stream framings read raw, the Vertex
forms of the paths, and bad input answered in Google's shape, naming the field."""

from __future__ import annotations

import json

import httpx
import pytest
from google import genai
from google.genai import errors, types

from ..support import sdk

EVERY_TOPOLOGY = True


def test_a_turn_answers_as_gemini_does(base_url: str, api_key: str) -> None:
    for version in ("v1beta", "v1"):
        done = sdk(base_url, api_key, version).models.generate_content(
            model="echo", contents="Hello there friend"
        )
        assert done.text == "Hello there friend"
        candidate = (done.candidates or [])[0]
        assert candidate.finish_reason == types.FinishReason.STOP
        assert candidate.content is not None and candidate.content.role == "model"
        usage = done.usage_metadata
        assert usage is not None
        assert (usage.prompt_token_count, usage.candidates_token_count, usage.total_token_count) == (3, 3, 6)
        assert done.model_version == "echo" and done.response_id


def test_a_stream_comes_in_chunks_and_ends_with_its_reason(base_url: str, api_key: str) -> None:
    client = sdk(base_url, api_key)
    chunks = list(client.models.generate_content_stream(model="models/echo", contents="one two three"))
    assert "".join(chunk.text or "" for chunk in chunks) == "one two three"
    assert len(chunks) >= 3
    last = chunks[-1]
    assert last.candidates and last.candidates[0].finish_reason == types.FinishReason.STOP
    assert last.usage_metadata is not None and last.usage_metadata.candidates_token_count == 3
    assert len({chunk.response_id for chunk in chunks}) == 1


def test_both_stream_framings_read_raw(base_url: str, api_key: str) -> None:
    """With `alt=sse`, SSE events of `data:` lines (no [DONE]); without it, one JSON array."""
    body = {"contents": [{"role": "user", "parts": [{"text": "a b c"}]}]}
    headers = {"x-goog-api-key": api_key}
    url = f"{base_url}/v1beta/models/echo:streamGenerateContent"
    sse = httpx.post(url + "?alt=sse", json=body, headers=headers, timeout=30)
    assert sse.status_code == 200 and sse.headers["content-type"].startswith("text/event-stream")
    events = [
        json.loads(line[len("data: ") :]) for line in sse.text.splitlines() if line.startswith("data: ")
    ]
    array = httpx.post(url, json=body, headers=headers, timeout=30)
    assert array.status_code == 200 and array.headers["content-type"].startswith("application/json")
    chunks = array.json()
    assert isinstance(chunks, list)
    for each in (events, chunks):
        text = "".join(
            p.get("text", "")
            for c in each
            for p in (c.get("candidates") or [{}])[0].get("content", {}).get("parts", [])
        )
        assert text == "a b c"
        assert each[-1]["candidates"][0]["finishReason"] == "STOP"
        assert each[-1]["usageMetadata"]["totalTokenCount"] == 6


def test_count_tokens_is_what_the_turn_counts(base_url: str, api_key: str) -> None:
    client = sdk(base_url, api_key)
    contents = "four words to count"
    counted = client.models.count_tokens(model="echo", contents=contents)
    done = client.models.generate_content(model="echo", contents=contents)
    assert done.usage_metadata is not None
    assert counted.total_tokens == done.usage_metadata.prompt_token_count == 4
    raw = httpx.post(
        f"{base_url}/v1beta/models/echo:countTokens",
        json={"contents": [{"parts": [{"text": contents}]}]},
        headers={"x-goog-api-key": api_key},
        timeout=30,
    )
    assert raw.json() == {"totalTokens": 4}
    # the echo models count their own: no warning that it is an estimate
    assert counted.sdk_http_response is not None
    assert "x-ix-warnings" not in (counted.sdk_http_response.headers or {})


def test_a_chat_of_three_turns_sends_its_history(base_url: str, api_key: str) -> None:
    chat = sdk(base_url, api_key).chats.create(model="echo")
    answers = [chat.send_message(text).text for text in ("first turn", "the second", "third and last")]
    assert answers == ["first turn", "the second", "third and last"]
    history = chat.get_history()
    assert [turn.role for turn in history] == ["user", "model"] * 3
    # the third turn's prompt is the whole history: its input counted all of it
    last = chat.send_message("more")
    assert (
        last.usage_metadata is not None
        and last.usage_metadata.prompt_token_count == 2 + 2 + 2 + 2 + 3 + 3 + 1
    )


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def test_automatic_function_calling_runs_the_function_and_answers_with_it(
    base_url: str, api_key: str
) -> None:
    """The SDK runs the function the model called and sends its result back: echo answers with it."""
    client = sdk(base_url, api_key)
    done = client.models.generate_content(
        model="echo",
        contents="Paris",
        config=types.GenerateContentConfig(tools=[get_weather]),
    )
    assert done.text is not None and "sunny in" in done.text
    history = done.automatic_function_calling_history or []
    calls = [part.function_call for turn in history for part in turn.parts or [] if part.function_call]
    assert [call.name for call in calls] == ["get_weather"]


def test_a_manual_function_call_round_trip(base_url: str, api_key: str) -> None:
    client = sdk(base_url, api_key)
    tool = types.Tool(
        function_declarations=[
            types.FunctionDeclaration(
                name="lookup",
                description="Look it up",
                parameters=types.Schema(
                    type=types.Type.OBJECT,
                    properties={"q": types.Schema(type=types.Type.STRING)},
                    required=["q"],
                ),
            )
        ]
    )
    config = types.GenerateContentConfig(
        tools=[tool], automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True)
    )
    asked = types.Content(role="user", parts=[types.Part(text="what is up")])
    first = client.models.generate_content(model="echo", contents=[asked], config=config)
    assert first.function_calls and first.function_calls[0].name == "lookup"
    assert first.candidates and first.candidates[0].finish_reason == types.FinishReason.STOP
    call = first.candidates[0].content
    assert call is not None
    answer = types.Content(
        role="user", parts=[types.Part.from_function_response(name="lookup", response={"result": "all good"})]
    )
    second = client.models.generate_content(model="echo", contents=[asked, call, answer], config=config)
    assert second.text == 'what is up [lookup: {"result":"all good"}]'
    assert first.function_calls[0].args == {"q": "what is up"}


def test_the_vertex_forms_of_the_paths(base_url: str, api_key: str) -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "on vertex"}]}]}
    headers = {"x-goog-api-key": api_key}
    for path in (
        "/v1/projects/p1/locations/us-central1/publishers/google/models/echo:generateContent",
        "/v1beta1/projects/p1/locations/global/models/echo:generateContent",
    ):
        reply = httpx.post(base_url + path, json=body, headers=headers, timeout=30)
        assert reply.status_code == 200, reply.text
        assert reply.json()["candidates"][0]["content"]["parts"] == [{"text": "on vertex"}]


def test_snake_case_names_are_read_as_googles_parser_reads_them(base_url: str, api_key: str) -> None:
    body = {
        "system_instruction": {"parts": [{"text": "Be brief."}]},
        "contents": [{"role": "user", "parts": [{"text": "snake case"}]}],
        "generation_config": {"max_output_tokens": 1},
    }
    reply = httpx.post(
        f"{base_url}/v1beta/models/echo:generateContent",
        json=body,
        headers={"x-goog-api-key": api_key},
        timeout=30,
    )
    assert reply.status_code == 200, reply.text
    assert "x-ix-warnings" not in reply.headers
    made = reply.json()
    assert made["candidates"][0]["content"]["parts"] == [{"text": "snake"}]
    assert made["candidates"][0]["finishReason"] == "MAX_TOKENS"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"contents": [{"role": "user", "parts": [{"text": 7}]}]}, "contents[0].parts[0].text"),
        ({"contents": [{"role": "bot", "parts": [{"text": "x"}]}]}, "contents[0].role"),
        ({"contents": []}, "contents"),
        (
            {"contents": [{"parts": [{"text": "x"}]}], "generationConfig": {"candidateCount": 2}},
            "generationConfig.candidateCount",
        ),
        ({"contents": [{"parts": [{"text": "x"}]}], "cachedContent": "cachedContents/c1"}, "cachedContent"),
        (
            {
                "contents": [{"parts": [{"text": "x"}]}],
                "generationConfig": {"responseMimeType": "text/x.enum"},
            },
            "generationConfig.responseMimeType",
        ),
    ],
)
def test_bad_input_is_a_400_in_googles_shape_naming_the_field(
    base_url: str, api_key: str, body: dict[str, object], field: str
) -> None:
    reply = httpx.post(
        f"{base_url}/v1beta/models/echo:generateContent",
        json=body,
        headers={"x-goog-api-key": api_key},
        timeout=30,
    )
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["status"] == "INVALID_ARGUMENT" and field in error["message"], error


def test_an_unknown_method_or_field_is_said(base_url: str, api_key: str) -> None:
    headers = {"x-goog-api-key": api_key}
    body = {"contents": [{"parts": [{"text": "x"}]}], "frobnicate": True}
    unknown = httpx.post(
        f"{base_url}/v1beta/models/echo:embedContent", json=body, headers=headers, timeout=30
    )
    assert unknown.status_code == 404 and "generateContent" in unknown.json()["error"]["message"]
    warned = httpx.post(
        f"{base_url}/v1beta/models/echo:generateContent", json=body, headers=headers, timeout=30
    )
    assert warned.status_code == 200 and "frobnicate" in warned.headers["x-ix-warnings"]
    # a name no header can hold as it is: escaped, on one line
    odd = {"contents": [{"parts": [{"text": "x"}]}], "bad\nname \u00fc": 1}
    escaped = httpx.post(
        f"{base_url}/v1beta/models/echo:generateContent", json=odd, headers=headers, timeout=30
    )
    assert escaped.status_code == 200, escaped.text
    assert "bad\\nname \\xfc" in escaped.headers["x-ix-warnings"]


def test_a_control_character_in_a_warning_is_escaped(base_url: str, api_key: str) -> None:
    """A field name may hold any character: the warning quoting it stays one valid header line."""
    headers = {"x-goog-api-key": api_key, "content-type": "application/json"}
    # JSON string escapes: U+0001, a tab, U+001F and U+007F in the unknown field's name
    body = b'{"contents": [{"parts": [{"text": "x"}]}], "a\\u0001b\\tc\\u001fd\\u007fe": 1}'
    for method, query in (("generateContent", ""), ("streamGenerateContent", "?alt=sse")):
        reply = httpx.post(
            f"{base_url}/v1beta/models/echo:{method}{query}", content=body, headers=headers, timeout=30
        )
        assert reply.status_code == 200, reply.text
        warning = reply.headers["x-ix-warnings"]
        assert "Unknown field ignored: a\\x01b\\tc\\x1fd\\x7fe" in warning, warning
        assert all(ord(c) >= 0x20 and c != "\x7f" for c in warning), warning


def test_alt_is_sse_or_json(base_url: str, api_key: str) -> None:
    """`alt=json` (Google's default) is the JSON array of a stream; any other `alt` is refused by name,
    before any turn is run."""
    headers = {"x-goog-api-key": api_key}
    body = {"contents": [{"parts": [{"text": "a b"}]}]}
    url = f"{base_url}/v1beta/models/echo"
    array = httpx.post(f"{url}:streamGenerateContent?alt=json", json=body, headers=headers, timeout=30)
    assert array.status_code == 200 and array.headers["content-type"].startswith("application/json")
    assert [chunk["responseId"] for chunk in array.json()]
    done = httpx.post(f"{url}:generateContent?alt=json", json=body, headers=headers, timeout=30)
    assert done.status_code == 200 and done.json()["candidates"][0]["content"]["parts"] == [{"text": "a b"}]
    for method in ("streamGenerateContent", "generateContent", "countTokens"):
        for alt in ("proto", "media", ""):
            refused = httpx.post(f"{url}:{method}?alt={alt}", json=body, headers=headers, timeout=30)
            assert refused.status_code == 400, (method, alt, refused.text)
            error = refused.json()["error"]
            assert error["status"] == "INVALID_ARGUMENT" and "`alt`" in error["message"], error


def test_the_sdk_sees_a_refusal_as_a_client_error(base_url: str, api_key: str) -> None:
    client: genai.Client = sdk(base_url, api_key)
    with pytest.raises(errors.ClientError) as refused:
        client.models.generate_content(
            model="echo", contents="x", config=types.GenerateContentConfig(candidate_count=3)
        )
    assert refused.value.code == 400 and "candidateCount" in str(refused.value)
    with pytest.raises(errors.ClientError) as unknown:
        client.models.generate_content(model="no-such-model", contents="x")
    assert unknown.value.code == 400 and "no-such-model" in str(unknown.value)
