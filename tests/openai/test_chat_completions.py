"""Chat Completions (`POST /v1/chat/completions`) through the official openai SDK: a stateless create of the
Interactions use case, answered as `chat.completion` or as a stream of `chat.completion.chunk`s. The echo
models answer what they are sent; `gpt-*` goes to a fake OpenAI upstream (tests/fakes/openai.py) where a
test needs a model's own tool call, or must see what the server sent upstream."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI
from pydantic import BaseModel

from tests.fakes import openai as oa

from .chat_support import ChatServer, openai_client

WEATHER_TOOL: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(32))).decode()


def upstream_body(chat: ChatServer, index: int = -1) -> Any:
    return chat.upstream.requests[index].json()


@pytest.mark.parametrize("base", ["/v1", "/openai/v1"])
def test_a_completion_answers_as_openai_does(chat: ChatServer, api_key: str, base: str) -> None:
    with openai_client(chat.url, api_key, base=base) as client:
        done = client.chat.completions.create(
            model="echo",
            messages=[
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Hello there friend"},
            ],
        )
    assert done.object == "chat.completion"
    assert done.id.startswith("chatcmpl-") and done.model == "echo" and done.created > 0
    [choice] = done.choices
    assert choice.index == 0 and choice.finish_reason == "stop"
    assert choice.message.role == "assistant" and choice.message.content == "Hello there friend"
    assert choice.message.tool_calls is None and choice.message.refusal is None
    assert done.usage is not None
    assert done.usage.completion_tokens == 3 and done.usage.prompt_tokens > 0
    assert done.usage.total_tokens == done.usage.prompt_tokens + done.usage.completion_tokens
    assert done.usage.completion_tokens_details is not None
    assert done.usage.completion_tokens_details.reasoning_tokens == 0


def test_a_completion_not_stored_names_nothing_afterwards(client: OpenAI) -> None:
    done = client.chat.completions.create(model="echo", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.retrieve(done.id)


def test_the_conversation_sent_is_what_the_model_gets(chat: ChatServer, client: OpenAI) -> None:
    chat.upstream.add(oa.openai_text_script("Fine."))
    client.chat.completions.create(
        model="gpt-4o",
        messages=[
            {"role": "developer", "content": "Be brief."},
            {"role": "system", "content": [{"type": "text", "text": "Be kind."}]},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello!"},
            {
                "role": "user",
                "content": [{"type": "text", "text": "How are "}, {"type": "text", "text": "you?"}],
            },
        ],
        temperature=0.25,
        top_p=0.5,
        seed=7,
        stop=["END"],
        max_completion_tokens=40,
        reasoning_effort="low",
    )
    body = upstream_body(chat)
    assert body["messages"] == [
        {"role": "system", "content": "Be brief.\n\nBe kind."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "How are \nyou?"},
    ]
    assert (body["temperature"], body["top_p"], body["seed"], body["stop"]) == (0.25, 0.5, 7, ["END"])
    # a server other than OpenAI's own takes the older name
    assert body["max_tokens"] == 40
    assert body["reasoning_effort"] == "low"


def test_the_token_limit_is_finish_reason_length(client: OpenAI) -> None:
    done = client.chat.completions.create(
        model="echo", messages=[{"role": "user", "content": "one two three four"}], max_tokens=2
    )
    assert done.choices[0].finish_reason == "length"
    assert done.choices[0].message.content == "one two"


def test_a_stream_with_usage(client: OpenAI) -> None:
    chunks = list(
        client.chat.completions.create(
            model="echo",
            messages=[{"role": "user", "content": "streamed words come one by one"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert {chunk.object for chunk in chunks} == {"chat.completion.chunk"}
    assert len({chunk.id for chunk in chunks}) == 1 and chunks[0].id.startswith("chatcmpl-")
    first, *middle, finish, usage = chunks
    assert first.choices[0].delta.role == "assistant" and first.choices[0].delta.content == ""
    assert "".join(c.choices[0].delta.content or "" for c in middle) == "streamed words come one by one"
    assert len(middle) == 6, "a chunk per word"
    assert all(c.choices[0].finish_reason is None for c in [first, *middle])
    assert finish.choices[0].finish_reason == "stop" and finish.usage is None
    assert usage.choices == [] and usage.usage is not None
    assert usage.usage.completion_tokens == 6


def test_a_stream_without_usage_ends_with_its_finish(client: OpenAI) -> None:
    chunks = list(
        client.chat.completions.create(
            model="echo", messages=[{"role": "user", "content": "a b"}], stream=True
        )
    )
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert all(chunk.usage is None for chunk in chunks)


def test_the_stream_ends_with_done(chat: ChatServer, api_key: str) -> None:
    body = {"model": "echo", "messages": [{"role": "user", "content": "x"}], "stream": True}
    headers = {"authorization": f"Bearer {api_key}"}
    with httpx.Client(base_url=chat.url, timeout=30) as http:
        reply = http.post("/v1/chat/completions", json=body, headers=headers)
    assert reply.headers["content-type"].startswith("text/event-stream")
    frames = [frame for frame in reply.text.split("\n\n") if frame]
    assert frames[-1] == "data: [DONE]"
    assert all(frame.startswith("data: {") for frame in frames[:-1])


@pytest.mark.parametrize("model", ["gpt-4o", "echo"])
def test_a_tool_call_round_trip_streamed(chat: ChatServer, client: OpenAI, model: str) -> None:
    """The SDK's stream helper reassembles the tool_call deltas; the call and its result go back as
    messages, and the model answers from them."""
    chat.upstream.add(
        oa.openai_tool_call_script("get_weather"), oa.openai_text_script("It is sunny in Paris.")
    )
    asked: Any = [{"role": "user", "content": "Paris"}]
    with client.chat.completions.stream(model=model, messages=asked, tools=[WEATHER_TOOL]) as stream:
        events = list(stream)
        first = stream.get_final_completion()
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    [call] = choice.message.tool_calls or []
    assert call.type == "function" and call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    pieces = [e for e in events if e.type == "tool_calls.function.arguments.delta" and e.arguments_delta]
    done = [e for e in events if e.type == "tool_calls.function.arguments.done"]
    assert len(done) == 1 and json.loads(done[0].arguments) == {"city": "Paris"}
    if model == "gpt-4o":
        assert call.id == "call_abc123"
        assert len(pieces) == 3, "each piece the model sent is a delta"
    assert call.id

    answered = [
        *asked,
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": "sunny"},
    ]
    second = client.chat.completions.create(model=model, messages=answered, tools=[WEATHER_TOOL])
    assert second.choices[0].finish_reason == "stop"
    if model == "echo":
        assert second.choices[0].message.content == "Paris [get_weather: sunny]"
        return
    assert second.choices[0].message.content == "It is sunny in Paris."
    messages = upstream_body(chat)["messages"]
    assert messages[1]["tool_calls"][0]["id"] == "call_abc123"
    assert json.loads(messages[1]["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}
    assert messages[2] == {"role": "tool", "tool_call_id": "call_abc123", "content": "sunny"}
    assert upstream_body(chat, 0)["tools"][0]["function"]["name"] == "get_weather"


def test_tool_choice_reaches_the_model(chat: ChatServer, client: OpenAI) -> None:
    chat.upstream.add(oa.openai_tool_call_script("get_weather"), oa.openai_tool_call_script("get_weather"))
    named = {"type": "function", "function": {"name": "get_weather"}}
    choices: list[tuple[Any, Any]] = [("required", "required"), (named, named)]
    for choice, sent in choices:
        client.chat.completions.create(
            model="gpt-4o",
            messages=[{"role": "user", "content": "Paris"}],
            tools=[WEATHER_TOOL],
            tool_choice=choice,
        )
        assert upstream_body(chat)["tool_choice"] == sent


def test_image_parts_reach_the_model(chat: ChatServer, client: OpenAI) -> None:
    chat.upstream.add(oa.openai_text_script("Two images."))
    data_url = f"data:image/png;base64,{PNG}"
    remote = "https://images.example/cat.jpg"
    client.chat.completions.create(
        model="gpt-4o",
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What are these?"},
                    {"type": "image_url", "image_url": {"url": data_url, "detail": "low"}},
                    {"type": "image_url", "image_url": {"url": remote}},
                ],
            }
        ],
    )
    [message] = upstream_body(chat)["messages"]
    assert message["content"] == [
        {"type": "text", "text": "What are these?"},
        {"type": "image_url", "image_url": {"url": data_url}},
        {"type": "image_url", "image_url": {"url": remote}},
    ]


class City(BaseModel):
    city: str
    temperature: int


def test_response_format_json_schema(chat: ChatServer, client: OpenAI) -> None:
    chat.upstream.add(oa.openai_text_script('{"city": "Paris", "temperature": 21}'))
    done = client.chat.completions.parse(
        model="gpt-4o", messages=[{"role": "user", "content": "Paris?"}], response_format=City
    )
    assert done.choices[0].message.parsed == City(city="Paris", temperature=21)
    # the SDK's helper asks for a strict schema: taken, and said not to be checked
    assert done.model_extra == {
        "warnings": ["response_format.json_schema.strict: the answer is not checked against the schema"]
    }
    sent = upstream_body(chat)["response_format"]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["schema"]["properties"].keys() == {"city", "temperature"}


def test_response_format_json_object(chat: ChatServer, client: OpenAI) -> None:
    chat.upstream.add(oa.openai_text_script("{}"))
    client.chat.completions.create(
        model="gpt-4o",
        messages=[{"role": "user", "content": "json"}],
        response_format={"type": "json_object"},
    )
    assert upstream_body(chat)["response_format"] == {"type": "json_object"}


def test_n_other_than_one_is_a_400_naming_n(chat: ChatServer, client: OpenAI, api_key: str) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="echo", messages=[{"role": "user", "content": "hi"}], n=2)
    assert refused.value.status_code == 400 and refused.value.param == "n"
    body = {"model": "echo", "messages": [{"role": "user", "content": "hi"}], "n": 2}
    with httpx.Client(base_url=chat.url, timeout=30) as http:
        reply = http.post("/v1/chat/completions", json=body, headers={"authorization": f"Bearer {api_key}"})
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error.keys() == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error" and error["param"] == "n" and "n=1" in error["message"]
    # n=1 asks for nothing more
    client.chat.completions.create(model="echo", messages=[{"role": "user", "content": "hi"}], n=1)


USER: Any = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"logprobs": True}, "logprobs"),
        ({"top_logprobs": 3}, "top_logprobs"),
        ({"audio": {"voice": "alloy", "format": "mp3"}}, "audio"),
        ({"modalities": ["text", "audio"]}, "modalities"),
        ({"prediction": {"type": "content", "content": "x"}}, "prediction"),
        ({"web_search_options": {}}, "web_search_options"),
        ({"frequency_penalty": 0.5}, "frequency_penalty"),
        ({"parallel_tool_calls": False}, "parallel_tool_calls"),
        ({"reasoning_effort": "none"}, "reasoning_effort"),
        ({"functions": [{"name": "f"}]}, "functions"),
        ({"tools": [{"type": "custom", "custom": {"name": "c"}}]}, "tools[0].type"),
        ({"stream_options": {"include_usage": True}}, "stream_options"),
        ({"messages": [{"role": "user", "content": "hi", "name": "ann"}]}, "messages[0].name"),
        ({"messages": [{"role": "system", "content": "only this"}]}, "messages"),
        ({"messages": [{"role": "narrator", "content": "x"}]}, "messages[0].role"),
        ({"model": None}, "model"),
        (
            {
                "messages": [
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "[1]"}}
                        ],
                    }
                ]
            },
            "messages[0].tool_calls[0].function.arguments",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "file", "file": {"file_id": "file-1"}}]}]},
            "messages[0].content[0].file.file_id",
        ),
        ({"metadata": {f"k{i}": "v" for i in range(17)}}, "metadata"),
        ({"tool_choice": {"type": "function", "function": {"name": "nope"}}}, "tool_choice.function.name"),
    ],
)
def test_what_is_not_served_is_a_400_naming_it(client: OpenAI, fields: dict[str, Any], param: str) -> None:
    body: dict[str, Any] = {"model": "echo", "messages": USER, **fields}
    if body["model"] is None:
        del body["model"]
    with pytest.raises(openai.BadRequestError) as refused:
        client.post("/chat/completions", body=body, cast_to=httpx.Response)
    assert refused.value.param == param, refused.value.message


def test_fields_that_ask_for_nothing_are_accepted(client: OpenAI) -> None:
    done = client.chat.completions.create(
        model="echo",
        messages=[{"role": "user", "content": "fine"}],
        logprobs=False,
        frequency_penalty=0,
        presence_penalty=0.0,
        modalities=["text"],
        parallel_tool_calls=True,
        service_tier="auto",
        user="someone",
        safety_identifier="abc",
        prompt_cache_key="k",
        metadata={"ignored": "unless stored"},
        # a field OpenAI does not define either: ignored, as Google's dialect ignores one (unless the
        # server sets http.strict_unknown_fields)
        extra_body={"vendor_knob": 3},
    )
    assert done.choices[0].message.content == "fine"
    assert done.model_extra == {"warnings": ["Unknown field ignored: vendor_knob"]}


def test_a_failure_midstream_is_the_streams_error(chat: ChatServer, client: OpenAI) -> None:
    chat.upstream.add(oa.openai_midstream_error_script("The model fell over"))
    stream = client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    with pytest.raises(openai.APIError) as failed:
        list(stream)
    assert "fell over" in failed.value.message


def test_an_upstream_refusal_is_openais_error(chat: ChatServer, client: OpenAI) -> None:
    chat.upstream.add(oa.openai_error(400, "Your prompt is bad", "invalid_request_error"))
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert "Your prompt is bad" in refused.value.message


def test_googles_routes_of_v1_are_served_beside_openais(chat: ChatServer, api_key: str) -> None:
    """`/v1` is both dialects' (api/openai/paths.py): Google's `/v1/...` routes are still found, and
    OpenAI's routes answer no other version."""
    google = {"x-goog-api-key": api_key}
    bearer = {"authorization": f"Bearer {api_key}"}
    chat_body = {"model": "echo", "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(base_url=chat.url, timeout=30) as http:
        made = http.post("/v1/interactions", json={"model": "echo", "input": "hi"}, headers=google)
        assert made.status_code == 200 and made.json()["object"] == "interaction"
        assert http.get(f"/v1/interactions/{made.json()['id']}", headers=google).status_code == 200
        elsewhere = http.post("/v1beta/chat/completions", json=chat_body, headers=bearer)
        assert elsewhere.status_code == 404
        assert elsewhere.json()["error"]["type"] == "invalid_request_error"
