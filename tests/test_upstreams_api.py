"""End to end: the official SDK against our server, talking to fake Gemini, OpenAI and Anthropic upstreams.

The three fakes (tests/fakes) run on their own event loop in a thread of the test process, on 127.0.0.1, so
the server reaches them over real HTTP while the tests use the blocking SDK. The server is the app in this
process (tests/inproc.py: its own Redis, the worker embedded, served on another thread's loop), which routes
`gemini-*`, `gpt-*`/`local-*` and `claude-*` to them. tests/test_upstream_failures.py borrows these fixtures
with a subprocess stack instead (e2e_stack: a web process and a worker process).
Each test queues the scripts its upstream calls will get and then asserts both what the SDK saw and what the
upstream received, in its own format.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from google import genai
from google.genai._interactions import (
    BadRequestError,
    InternalServerError,
    RateLimitError,
)
from google.genai.interactions import FunctionCallStep, Interaction, TextContent, ThoughtStep
from redis import Redis as SyncRedis

from server.launch.redis_process import free_port
from tests.fakes import anthropic as an
from tests.fakes import gemini as gm
from tests.fakes import openai as oa
from tests.fakes.http import FakeServer, RecordedRequest, Script
from tests.fakes.loop import FakeLoop

from .inproc import ThreadedApp, environment, threaded
from .replies import error_of, id_of, interaction, output_text_of, steps_of, usage_of
from .sse import events as sse_events
from .sse import text_of
from .support import Stack, running_stack, sdk, tenant_of
from .waiting import until

SECRETS = {
    "IX_E2E_GEMINI_KEY": "gemini-secret-e2e",
    "IX_E2E_OPENAI_KEY": "openai-secret-e2e",
    "IX_E2E_ANTHROPIC_KEY": "anthropic-secret-e2e",
}
#: one requested model name per backend
MODEL = {"gemini": "gemini-3-flash", "openai": "gpt-4o", "anthropic": "claude-sonnet-4"}
BACKENDS = list(MODEL)
#: the background retry policy of this module's server: Retry-After of 1 s is honoured, not capped
RETRY = {"attempts": 3, "backoff_initial_seconds": 0.05, "backoff_max_seconds": 2.0}

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(64))).decode()
WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


# ---------------------------------------------------------------------------------------------------------
# Fixtures: the fakes on a thread's loop, one server for the module


@dataclass
class Upstreams:
    gemini: FakeServer
    openai: FakeServer
    anthropic: FakeServer

    def __getitem__(self, backend: str) -> FakeServer:
        fake: FakeServer = getattr(self, backend)
        return fake

    def all(self) -> list[FakeServer]:
        return [self.gemini, self.openai, self.anthropic]

    def reset(self) -> None:
        for fake in self.all():
            fake.scripts.clear()
            fake.requests.clear()
            fake.disconnects.clear()


def models_toml(up: Upstreams, dead_url: str) -> str:
    def route(match: str, backend: str, base_url: str, key: str, **extra: Any) -> str:
        lines = [
            "[[models]]",
            f'match = "{match}"',
            f'backend = "{backend}"',
            f'base_url = "{base_url}"',
            f'api_key_env = "{key}"',
        ]
        for name, value in extra.items():
            lines.append(f"{name} = {json.dumps(value)}")
        return "\n".join(lines) + "\n"

    return "\n".join(
        [
            # first match wins: the special routes come before the globs that would also match them
            route(
                "gemini-slow-*", "gemini", up.gemini.base_url, "IX_E2E_GEMINI_KEY", read_timeout_seconds=0.5
            ),
            route("gemini-brief-*", "gemini", up.gemini.base_url, "IX_E2E_GEMINI_KEY", deadline_seconds=0.6),
            route("dead-*", "openai", dead_url, "IX_E2E_OPENAI_KEY", connect_timeout_seconds=2.0),
            route("gemini-*", "gemini", up.gemini.base_url, "IX_E2E_GEMINI_KEY"),
            route("gpt-*", "openai", up.openai.base_url + "/v1", "IX_E2E_OPENAI_KEY"),
            route("local-*", "openai", up.openai.base_url, "IX_E2E_OPENAI_KEY", upstream_model="qwen2.5:7b"),
            route("claude-*", "anthropic", up.anthropic.base_url, "IX_E2E_ANTHROPIC_KEY"),
        ]
    )


@pytest.fixture(scope="module")
def upstreams() -> Iterator[Upstreams]:
    loop = FakeLoop()

    async def start() -> Upstreams:
        return Upstreams(await FakeServer().start(), await FakeServer().start(), await FakeServer().start())

    up: Upstreams = loop.call(start())
    try:
        yield up
    finally:

        async def stop() -> None:
            for fake in up.all():
                await fake.stop()

        loop.call(stop())
        loop.close()


@pytest.fixture(scope="module")
def e2e_stack(upstreams: Upstreams, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    dead_url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with running_stack(
        Path(tmp_path_factory.mktemp("upstreams")),
        config={"upstream_retry": RETRY},
        models=models_toml(upstreams, dead_url),
        workers=1,
        env=SECRETS,
    ) as stack:
        yield stack


@pytest.fixture(scope="module")
def e2e_app(upstreams: Upstreams, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedApp]:
    """The app in this process (tests/inproc.py) with the routes of e2e_stack, its worker embedded."""
    dead_url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with (
        environment(SECRETS),  # the routes read their keys from the environment, per request
        threaded(
            Path(tmp_path_factory.mktemp("upstreams-in-process")),
            config={"upstream_retry": RETRY},
            models=models_toml(upstreams, dead_url),
        ) as app,
    ):
        yield app


@pytest.fixture(scope="module")
def url(request: pytest.FixtureRequest) -> str:
    """This module's server: the app in this process. tests/test_upstream_failures.py borrows this fixture
    and gets the subprocess stack (e2e_stack) instead: its cancels cross from a web process to a worker
    process, and it reads the processes' logs."""
    if request.module.__name__ == __name__:
        app: ThreadedApp = request.getfixturevalue("e2e_app")
        return app.url
    stack: Stack = request.getfixturevalue("e2e_stack")
    return stack.url


@pytest.fixture(autouse=True)
def fresh(upstreams: Upstreams) -> Iterator[None]:
    upstreams.reset()
    yield
    upstreams.reset()


@pytest.fixture
def ai(url: str, api_key: str) -> genai.Client:
    """The official SDK, without its own retries: each scripted upstream answer is used exactly once."""
    return sdk(url, api_key, "v1beta")


@pytest.fixture
def api(url: str, api_key: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=url, headers={"x-goog-api-key": api_key}, timeout=30) as client:
        yield client


# ---------------------------------------------------------------------------------------------------------
# Helpers


def only_request(fake: FakeServer) -> RecordedRequest:
    assert len(fake.requests) == 1, [r.target for r in fake.requests]
    return fake.requests[0]


def create(ai: genai.Client, **fields: Any) -> Interaction:
    """`ai.interactions.create(...)` without `stream`: the interaction (the SDK types the reply as "an
    interaction or a stream" for model names it does not know, tests/replies.py)."""
    return interaction(ai.interactions.create(**fields))


def step_types(reply: Interaction) -> list[str]:
    return [step.type for step in reply.steps or []]


def step_of(reply: Interaction, kind: str) -> Any:
    """The first step of type `kind`, as the test reads it (any of the SDK's step classes)."""
    return next(step for step in steps_of(reply) if step.type == kind)


def calls_of(reply: Interaction) -> list[FunctionCallStep]:
    return [step for step in steps_of(reply) if isinstance(step, FunctionCallStep)]


def thoughts_of(reply: Interaction) -> list[ThoughtStep]:
    return [step for step in steps_of(reply) if isinstance(step, ThoughtStep)]


def summary_text(thought: ThoughtStep) -> str:
    """The text of a thought's first summary."""
    assert thought.summary, thought
    summary = thought.summary[0]
    assert isinstance(summary, TextContent), summary
    return summary.text


def raw_interaction(api: httpx.Client, interaction_id: str | None) -> dict[str, Any]:
    assert interaction_id, "an interaction that was stored has an id"
    response = api.get(f"/v1beta/interactions/{interaction_id}", params={"stream": "false"})
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def wait_status(ai: genai.Client, interaction_id: str, *statuses: str, timeout: float = 15) -> Any:
    def check() -> Any:
        got = ai.interactions.get(interaction_id)
        return got if got.status in statuses else None

    return until(check, timeout=timeout, interval=0.05)


def user_text_of(backend: str, body: dict[str, Any]) -> str:
    """The text of the last user message of an upstream request, read in the backend's own format."""
    if backend == "gemini":
        turn = [c for c in body["contents"] if c["role"] == "user"][-1]
        return "".join(p.get("text", "") for p in turn["parts"])
    message = [m for m in body["messages"] if m["role"] == "user"][-1]
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if p.get("type") == "text")


def text_script(backend: str, text: str = "Hello world", **knobs: Any) -> Script:
    if backend == "gemini":
        return gm.gemini_text_script(text, **knobs)
    if backend == "openai":
        return oa.openai_text_script(text, **knobs)
    return an.anthropic_text_script(text, **knobs)


def words_script(backend: str, count: int, delay: float) -> Script:
    """A slow Gemini answer "w0 w1 ...": a word per chunk every `delay` seconds, usage on each chunk."""
    assert backend == "gemini"
    chunks = [gm.chunk([{"text": f"w{i} "}], meta=gm.usage(output=i + 1)) for i in range(count)]
    chunks[-1]["candidates"][0]["finishReason"] = "STOP"
    return gm.script(chunks, chunk_delay=delay)


# ---------------------------------------------------------------------------------------------------------
# Text, non-stream and stream


@pytest.mark.parametrize("backend", BACKENDS)
def test_text_answer(backend: str, ai: genai.Client, api: httpx.Client, upstreams: Upstreams) -> None:
    fake = upstreams[backend]
    fake.add(text_script(backend, "Hello world"))
    reply = create(
        ai,
        model=MODEL[backend],
        input="Say hello",
        system_instruction="Be terse.",
        generation_config={"temperature": 0.2, "max_output_tokens": 64},
    )
    assert reply.status == "completed"
    assert reply.output_text == "Hello world"
    assert step_types(reply) == ["model_output"]
    assert reply.model == MODEL[backend]

    sent = only_request(fake)
    body = sent.json()
    assert user_text_of(backend, body) == "Say hello"
    if backend == "gemini":
        assert sent.path == f"/v1beta/models/{MODEL[backend]}:streamGenerateContent"
        assert sent.query == "alt=sse"
        assert sent.headers["x-goog-api-key"] == SECRETS["IX_E2E_GEMINI_KEY"]
        assert body["contents"] == [{"role": "user", "parts": [{"text": "Say hello"}]}]
        assert body["systemInstruction"] == {"parts": [{"text": "Be terse."}]}
        assert body["generationConfig"] == {"temperature": 0.2, "maxOutputTokens": 64}
    elif backend == "openai":
        assert sent.path == "/v1/chat/completions"
        assert sent.headers["authorization"] == f"Bearer {SECRETS['IX_E2E_OPENAI_KEY']}"
        assert body["model"] == "gpt-4o"
        assert body["messages"] == [
            {"role": "system", "content": "Be terse."},
            {"role": "user", "content": "Say hello"},
        ]
        assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
        assert body["temperature"] == 0.2 and body["max_tokens"] == 64
    else:
        assert sent.path == "/v1/messages"
        assert sent.headers["x-api-key"] == SECRETS["IX_E2E_ANTHROPIC_KEY"]
        assert sent.headers["anthropic-version"]
        assert body["model"] == "claude-sonnet-4"
        assert body["system"] == "Be terse."
        assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Say hello"}]}]
        assert body["max_tokens"] == 64 and body["stream"] is True

    # stored, and the upstream key is neither stored nor returned
    stored = raw_interaction(api, reply.id)
    assert stored["status"] == "completed"
    assert [s["type"] for s in stored["steps"]] == ["user_input", "model_output"]
    assert not any(secret in json.dumps(stored) for secret in SECRETS.values())


@pytest.mark.parametrize("backend", BACKENDS)
def test_text_answer_streamed(backend: str, ai: genai.Client, upstreams: Upstreams) -> None:
    upstreams[backend].add(text_script(backend, "Hello there big world"))
    stream = list(ai.interactions.create(model=MODEL[backend], input="Say hello", stream=True))
    kinds = [e.event_type for e in stream]
    assert kinds[0] == "interaction.created"
    assert kinds[-1] == "interaction.completed"
    assert "error" not in kinds
    assert kinds.count("step.start") == kinds.count("step.stop") == 1
    deltas = [e.delta.text for e in stream if e.event_type == "step.delta"]
    assert len(deltas) >= 2, "the answer arrives in pieces, as the upstream sent it"
    assert "".join(deltas) == "Hello there big world"
    created = stream[0].interaction
    completed = stream[-1].interaction
    assert created.id and completed.id == created.id
    assert completed.status == "completed"
    assert completed.usage is not None and completed.usage.total_tokens
    got = ai.interactions.get(created.id)
    assert got.status == "completed" and got.output_text == "Hello there big world"
    assert len(upstreams[backend].requests) == 1


def test_local_route_sends_the_configured_upstream_model(ai: genai.Client, upstreams: Upstreams) -> None:
    """`local-*` goes to the OpenAI-compatible fake under the upstream model name of its route."""
    upstreams.openai.add(oa.openai_text_script("Hi from Qwen"))
    reply = create(ai, model="local-qwen", input="hi")
    assert reply.output_text == "Hi from Qwen"
    assert reply.model == "local-qwen"
    sent = only_request(upstreams.openai)
    assert sent.path == "/v1/chat/completions"
    assert sent.json()["model"] == "qwen2.5:7b"


# ---------------------------------------------------------------------------------------------------------
# Multimodal input


@pytest.mark.parametrize("backend", BACKENDS)
def test_image_input_reaches_the_upstream_natively(
    backend: str, ai: genai.Client, upstreams: Upstreams
) -> None:
    fake = upstreams[backend]
    fake.add(text_script(backend, "Two pictures"))
    reply = create(
        ai,
        model=MODEL[backend],
        input=[
            {"type": "text", "text": "What is in these?"},
            {"type": "image", "mime_type": "image/png", "data": PNG},
            {"type": "image", "mime_type": "image/jpeg", "uri": "https://example.com/cat.jpg"},
        ],
    )
    assert reply.status == "completed" and reply.output_text == "Two pictures"
    body = only_request(fake).json()
    if backend == "gemini":
        assert body["contents"] == [
            {
                "role": "user",
                "parts": [
                    {"text": "What is in these?"},
                    {"inlineData": {"mimeType": "image/png", "data": PNG}},
                    {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://example.com/cat.jpg"}},
                ],
            }
        ]
    elif backend == "openai":
        assert body["messages"] == [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in these?"},
                    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                    {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
                ],
            }
        ]
    else:
        assert body["messages"] == [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in these?"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
                    {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
                ],
            }
        ]


def test_modality_a_backend_cannot_take_is_a_400(ai: genai.Client, upstreams: Upstreams) -> None:
    with pytest.raises(BadRequestError) as caught:
        create(
            ai,
            model=MODEL["openai"],
            input=[
                {"type": "text", "text": "Watch"},
                {"type": "video", "mime_type": "video/mp4", "uri": "https://example.com/v.mp4"},
            ],
        )
    message = str(caught.value)
    assert "openai" in message and "video" in message
    assert upstreams.openai.requests == []


# ---------------------------------------------------------------------------------------------------------
# Function calling round trip


def call_script(backend: str) -> Script:
    if backend == "gemini":
        return gm.gemini_function_call_script("get_weather", {"city": "Paris"}, signature="Zm4tc2ln")
    if backend == "openai":
        return oa.openai_tool_call_script("get_weather", call_id="call_abc123")
    return an.anthropic_tool_use_script("get_weather", call_id="toolu_01abc")


@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_function_calling_round_trip(
    backend: str, stream: bool, ai: genai.Client, api: httpx.Client, upstreams: Upstreams
) -> None:
    fake = upstreams[backend]
    fake.add(call_script(backend), text_script(backend, "It is sunny in Paris."))
    model = MODEL[backend]
    if stream:
        events = list(
            ai.interactions.create(model=model, input="Weather in Paris?", tools=[WEATHER_TOOL], stream=True)
        )
        starts = [e.step for e in events if e.event_type == "step.start"]
        call_start = next(s for s in starts if s.type == "function_call")
        assert call_start.id and call_start.name == "get_weather"
        fragments = [
            e.delta.arguments
            for e in events
            if e.event_type == "step.delta" and e.delta.type == "arguments_delta"
        ]
        assert json.loads("".join(fragments)) == {"city": "Paris"}
        assert events[-1].event_type == "interaction.completed"
        assert events[-1].interaction.status == "requires_action"
        first = ai.interactions.get(events[0].interaction.id)
    else:
        first = create(ai, model=model, input="Weather in Paris?", tools=[WEATHER_TOOL])
    assert first.status == "requires_action"
    call = step_of(first, "function_call")
    assert call.name == "get_weather"
    assert call.arguments == {"city": "Paris"}
    if backend == "openai":
        assert call.id == "call_abc123"
    elif backend == "anthropic":
        assert call.id == "toolu_01abc"
    else:
        assert call.id  # Gemini sends none: ours

    # the client answers without a `name` (the SDK allows it): the server pairs the result with its call
    second = create(
        ai,
        model=model,
        previous_interaction_id=first.id,
        input=[{"type": "function_result", "call_id": call.id, "result": "sunny"}],
        tools=[WEATHER_TOOL],
    )
    assert second.status == "completed"
    assert second.output_text == "It is sunny in Paris."
    assert len(fake.requests) == 2
    first_body, body = fake.requests[0].json(), fake.requests[1].json()

    if backend == "gemini":
        assert first_body["tools"] == [
            {
                "functionDeclarations": [
                    {
                        "name": "get_weather",
                        "description": "The weather in a city",
                        "parametersJsonSchema": WEATHER_TOOL["parameters"],
                    }
                ]
            }
        ]
        assert body["contents"] == [
            {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
            {
                "role": "model",
                "parts": [
                    {
                        "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                        "thoughtSignature": "Zm4tc2ln",
                    }
                ],
            },
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "get_weather", "response": {"result": "sunny"}}}],
            },
        ]
    elif backend == "openai":
        assert first_body["tools"] == [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "The weather in a city",
                    "parameters": WEATHER_TOOL["parameters"],
                },
            }
        ]
        messages = body["messages"]
        assert messages[0] == {"role": "user", "content": "Weather in Paris?"}
        assert messages[1]["role"] == "assistant"
        [tool_call] = messages[1]["tool_calls"]
        assert tool_call["id"] == "call_abc123" and tool_call["type"] == "function"
        assert tool_call["function"]["name"] == "get_weather"
        assert json.loads(tool_call["function"]["arguments"]) == {"city": "Paris"}
        assert messages[2] == {"role": "tool", "tool_call_id": "call_abc123", "content": "sunny"}
        assert len(messages) == 3
    else:
        assert first_body["tools"] == [
            {
                "name": "get_weather",
                "description": "The weather in a city",
                "input_schema": WEATHER_TOOL["parameters"],
            }
        ]
        assert body["messages"] == [
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Checking."},
                    {
                        "type": "tool_use",
                        "id": "toolu_01abc",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_01abc", "content": "sunny"}],
            },
        ]

    # the stored timeline pairs the result with its call, with the name filled in
    timeline = raw_interaction(api, second.id)["steps"]
    result = next(s for s in timeline if s["type"] == "function_result")
    assert result["call_id"] == call.id and result["name"] == "get_weather"


#: a tool whose only parameter is optional: models call it with no arguments at all
CLOCK_TOOL = {
    "type": "function",
    "name": "get_time",
    "description": "The time now",
    "parameters": {"type": "object", "properties": {"utc": {"type": "boolean"}}},
}
NO_ARGS_BACKENDS = [*BACKENDS, "echo"]


def no_args_call_script(backend: str) -> Script | None:
    """Each provider's way of calling a function with no arguments (echo needs no script)."""
    if backend == "gemini":
        return gm.script([gm.chunk([{"functionCall": {"name": "get_time"}}], finish="STOP", meta=gm.usage())])
    if backend == "openai":
        return oa.openai_tool_call_script("get_time", fragments=(), call_id="call_time")
    if backend == "anthropic":
        return an.anthropic_tool_use_script("get_time", fragments=(), call_id="toolu_time")
    return None


def create_no_args_call(backend: str, ai: genai.Client, upstreams: Upstreams, stream: bool) -> Any:
    """A create whose answer is one call without arguments; its events (streamed) or the interaction."""
    script = no_args_call_script(backend)
    if script is not None:
        upstreams[backend].add(script)
    model = MODEL.get(backend, backend)
    if stream:
        return list(
            ai.interactions.create(model=model, input="What time is it?", tools=[CLOCK_TOOL], stream=True)
        )
    return create(ai, model=model, input="What time is it?", tools=[CLOCK_TOOL])


@pytest.mark.parametrize("backend", NO_ARGS_BACKENDS)
def test_a_call_without_arguments_has_empty_arguments(
    backend: str, ai: genai.Client, api: httpx.Client, upstreams: Upstreams
) -> None:
    """`arguments` is `{}`, never absent: clients call `fn(**call.arguments)` (issue 10, item 9)."""
    reply = create_no_args_call(backend, ai, upstreams, stream=False)
    assert reply.status == "requires_action"
    call = step_of(reply, "function_call")
    assert call.name == "get_time" and call.arguments == {}
    assert step_of(ai.interactions.get(reply.id), "function_call").arguments == {}
    raw = next(s for s in raw_interaction(api, reply.id)["steps"] if s["type"] == "function_call")
    assert raw["arguments"] == {}

    def get_time() -> str:
        return "noon"

    if backend != "echo":  # the empty arguments go back upstream as the provider's own empty arguments
        upstreams[backend].add(text_script(backend, "It is noon."))
    answer = create(
        ai,
        model=MODEL.get(backend, backend),
        previous_interaction_id=reply.id,
        input=[{"type": "function_result", "call_id": call.id, "result": get_time(**call.arguments)}],
        tools=[CLOCK_TOOL],
    )
    assert answer.status == "completed"
    if backend == "gemini":
        assert upstreams.gemini.requests[1].json()["contents"][1]["parts"][0]["functionCall"]["args"] == {}
    elif backend == "openai":
        [sent] = upstreams.openai.requests[1].json()["messages"][1]["tool_calls"]
        assert sent["function"]["arguments"] == "{}"
    elif backend == "anthropic":
        assistant = upstreams.anthropic.requests[1].json()["messages"][1]
        assert assistant["content"][-1]["input"] == {}


@pytest.mark.parametrize("backend", NO_ARGS_BACKENDS)
def test_a_streamed_call_without_arguments_has_empty_arguments(
    backend: str, ai: genai.Client, upstreams: Upstreams
) -> None:
    events = create_no_args_call(backend, ai, upstreams, stream=True)
    start = next(e.step for e in events if e.event_type == "step.start" and e.step.type == "function_call")
    assert start.arguments == {}
    fragments = [
        e.delta.arguments
        for e in events
        if e.event_type == "step.delta" and e.delta.type == "arguments_delta"
    ]
    assert json.loads("".join(fragments)) == {}  # a client that joins the fragments gets an object
    completed = events[-1]
    assert completed.event_type == "interaction.completed"
    assert step_of(completed.interaction, "function_call").arguments == {}
    stored = ai.interactions.get(completed.interaction.id)
    assert step_of(stored, "function_call").arguments == {}


# ---------------------------------------------------------------------------------------------------------
# Thoughts and signatures


def test_gemini_thought_signature_round_trips_only_to_gemini(
    ai: genai.Client, api: httpx.Client, upstreams: Upstreams
) -> None:
    upstreams.gemini.add(gm.gemini_thought_script("Let me think.", "42", signature="c2lnLWdlbWluaQ=="))
    first = create(ai, model=MODEL["gemini"], input="The answer?")
    assert first.status == "completed" and first.output_text == "42"
    thoughts = thoughts_of(first)
    assert [summary_text(t) for t in thoughts if t.summary] == ["Let me think."]
    signature = next(t.signature for t in thoughts if t.signature)
    assert signature != "c2lnLWdlbWluaQ==", "the native signature is sealed with its backend"
    assert usage_of(first).total_thought_tokens == 7

    # continued on Gemini (server-side history): Gemini gets its own signature back
    upstreams.gemini.add(gm.gemini_text_script("Sure."))
    create(ai, model=MODEL["gemini"], input="Sure?", previous_interaction_id=first.id)
    contents = upstreams.gemini.requests[1].json()["contents"]
    model_parts = [p for c in contents if c["role"] == "model" for p in c["parts"]]
    assert {"text": "42"} in model_parts
    assert [p["thoughtSignature"] for p in model_parts if "thoughtSignature" in p] == ["c2lnLWdlbWluaQ=="]

    # the client replays the steps itself (store=false), signature included: still only Gemini gets it
    steps = raw_interaction(api, first.id)["steps"]
    replay = [*steps, {"type": "user_input", "content": [{"type": "text", "text": "And?"}]}]
    upstreams.gemini.add(gm.gemini_text_script("Again."))
    again = create(ai, model=MODEL["gemini"], input=replay, store=False)
    assert again.output_text == "Again."
    replayed = json.dumps(upstreams.gemini.requests[2].json())
    assert "c2lnLWdlbWluaQ==" in replayed

    # the same history sent to Anthropic and OpenAI: the text, never Gemini's signature
    upstreams.anthropic.add(an.anthropic_text_script("Claude here."))
    upstreams.openai.add(oa.openai_text_script("GPT here."))
    assert create(ai, model=MODEL["anthropic"], input=replay, store=False).status == "completed"
    assert create(ai, model=MODEL["openai"], input=replay, store=False).status == "completed"
    for backend in ("anthropic", "openai"):
        body = only_request(upstreams[backend]).json()
        raw = json.dumps(body)
        assert "c2lnLWdlbWluaQ==" not in raw and signature not in raw
        assistant = [m for m in body["messages"] if m["role"] == "assistant"]
        assert "42" in json.dumps(assistant)


def test_anthropic_thinking_signature_round_trips_only_to_anthropic(
    ai: genai.Client, upstreams: Upstreams
) -> None:
    upstreams.anthropic.add(an.anthropic_thinking_script("Let me think.", "EqAnthropicSig", "42"))
    first = create(ai, model=MODEL["anthropic"], input="The answer?")
    assert first.status == "completed" and first.output_text == "42"
    assert step_types(first) == ["thought", "thought", "model_output"]
    thinking, redacted = thoughts_of(first)
    assert summary_text(thinking) == "Let me think." and thinking.signature
    assert "EqAnthropicSig" not in thinking.signature
    assert redacted.signature and not redacted.summary

    # two continuations of the same turn: one on Anthropic, one on Gemini
    upstreams.anthropic.add(an.anthropic_text_script("Yes."))
    upstreams.gemini.add(gm.gemini_text_script("Yes."))
    create(ai, model=MODEL["anthropic"], input="Sure?", previous_interaction_id=first.id)
    create(ai, model=MODEL["gemini"], input="Sure?", previous_interaction_id=first.id)

    anthropic_body = upstreams.anthropic.requests[1].json()
    assert anthropic_body["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Let me think.", "signature": "EqAnthropicSig"},
            {"type": "redacted_thinking", "data": "cmVkYWN0ZWQ="},
            {"type": "text", "text": "42"},
        ],
    }
    gemini_body = only_request(upstreams.gemini).json()
    raw = json.dumps(gemini_body)
    assert "EqAnthropicSig" not in raw and "cmVkYWN0ZWQ=" not in raw and "thoughtSignature" not in raw
    assert gemini_body["contents"] == [
        {"role": "user", "parts": [{"text": "The answer?"}]},
        {"role": "model", "parts": [{"text": "42"}]},
        {"role": "user", "parts": [{"text": "Sure?"}]},
    ]


def test_openai_reasoning_becomes_a_thought_and_is_not_replayed(
    ai: genai.Client, upstreams: Upstreams
) -> None:
    upstreams.openai.add(oa.openai_reasoning_script("Think.", "Done"))
    first = create(ai, model=MODEL["openai"], input="Go")
    assert step_types(first) == ["thought", "model_output"]
    assert summary_text(thoughts_of(first)[0]) == "Think."
    assert first.output_text == "Done"
    assert usage_of(first).total_thought_tokens == 6 and usage_of(first).total_output_tokens == 4
    upstreams.openai.add(oa.openai_text_script("Ok"))
    create(ai, model=MODEL["openai"], input="More", previous_interaction_id=first.id)
    assert upstreams.openai.requests[1].json()["messages"] == [
        {"role": "user", "content": "Go"},
        {"role": "assistant", "content": "Done"},
        {"role": "user", "content": "More"},
    ]


@pytest.mark.parametrize("backend", ["gemini", "anthropic"])
def test_streamed_thought_signature_matches_the_stored_one(
    backend: str, ai: genai.Client, upstreams: Upstreams
) -> None:
    script = gm.gemini_thought_script() if backend == "gemini" else an.anthropic_thinking_script()
    upstreams[backend].add(script)
    stream = list(ai.interactions.create(model=MODEL[backend], input="Think", stream=True))
    streamed = [
        e.delta.signature
        for e in stream
        if e.event_type == "step.delta" and e.delta.type == "thought_signature"
    ]
    summaries = [
        e.delta.content.text
        for e in stream
        if e.event_type == "step.delta" and e.delta.type == "thought_summary"
    ]
    assert summaries == ["Let me think."]
    stored = ai.interactions.get(stream[0].interaction.id)
    assert streamed and streamed == [s.signature for s in thoughts_of(stored) if s.signature]


# ---------------------------------------------------------------------------------------------------------
# Usage and finish reasons


def usage_script(backend: str) -> Script:
    if backend == "gemini":
        return gm.script(
            [
                gm.chunk(
                    [{"text": "ok"}], finish="STOP", meta=gm.usage(prompt=11, output=7, thoughts=3, cached=4)
                )
            ]
        )
    if backend == "openai":
        return oa.openai_text_script(
            "ok", usage=oa.usage_chunk(prompt=20, completion=9, cached=5, reasoning=2)
        )
    events = [an.message_start(input_tokens=12, cache_read=30, cache_write=8), *an.text_block(0, "ok")]
    return an.script([*events, *an.message_end(output_tokens=5)])


#: backend -> (input, output, thought, cached, total) as the API reports them
EXPECTED_USAGE = {
    "gemini": (11, 7, 3, 4, 21),
    "openai": (20, 7, 2, 5, 29),  # reasoning is counted inside completion_tokens upstream
    "anthropic": (50, 5, None, 30, 55),  # input = uncached + cache reads + cache writes
}


@pytest.mark.parametrize("backend", BACKENDS)
def test_usage_mapping(backend: str, ai: genai.Client, upstreams: Upstreams) -> None:
    upstreams[backend].add(usage_script(backend))
    usage = usage_of(create(ai, model=MODEL[backend], input="count"))
    got = (
        usage.total_input_tokens,
        usage.total_output_tokens,
        usage.total_thought_tokens,
        usage.total_cached_tokens,
        usage.total_tokens,
    )
    assert got == EXPECTED_USAGE[backend]


#: backend -> (the upstream's "ran out of tokens" knob, its "blocked" knob)
FINISH = {
    "gemini": ({"finish": "MAX_TOKENS"}, {"finish": "SAFETY"}),
    "openai": ({"finish": "length"}, {"finish": "content_filter"}),
    "anthropic": ({"stop_reason": "max_tokens"}, {"stop_reason": "refusal"}),
}


@pytest.mark.parametrize("backend", BACKENDS)
def test_max_tokens_is_incomplete(backend: str, ai: genai.Client, upstreams: Upstreams) -> None:
    upstreams[backend].add(text_script(backend, "Hello world", **FINISH[backend][0]))
    reply = create(ai, model=MODEL[backend], input="Long story")
    assert reply.status == "incomplete"
    assert reply.output_text == "Hello world"
    assert not reply.errors
    assert ai.interactions.get(id_of(reply)).status == "incomplete"


@pytest.mark.parametrize("backend", BACKENDS)
def test_safety_block_fails_with_a_clear_error(backend: str, ai: genai.Client, upstreams: Upstreams) -> None:
    upstreams[backend].add(text_script(backend, "Hello world", **FINISH[backend][1]))
    reply = create(ai, model=MODEL[backend], input="Something bad")
    assert reply.status == "failed"
    code, message = error_of(reply)
    assert code == "content_blocked"
    assert any(word in message.lower() for word in ("safety", "content filter", "declined")), message
    got = ai.interactions.get(id_of(reply))
    assert got.status == "failed" and error_of(got)[0] == "content_blocked"


# ---------------------------------------------------------------------------------------------------------
# Mid-stream errors


def midstream_error_script(backend: str) -> tuple[Script, str]:
    """An answer that starts ("Hel") and then fails after the 200, and the words the failure must carry."""
    if backend == "gemini":
        error = {"error": {"code": 500, "message": "Internal error encountered.", "status": "INTERNAL"}}
        return gm.script([gm.chunk([{"text": "Hel"}]), error]), "Internal error encountered."
    if backend == "openai":
        return oa.openai_midstream_error_script("The server had an error"), "The server had an error"
    return an.anthropic_error_event_script("overloaded_error", "Overloaded"), "Overloaded"


@pytest.mark.parametrize("backend", BACKENDS)
def test_midstream_error_fails_the_unary_call(backend: str, ai: genai.Client, upstreams: Upstreams) -> None:
    script, words = midstream_error_script(backend)
    upstreams[backend].add(script)
    reply = create(ai, model=MODEL[backend], input="Hello?")
    assert reply.status == "failed"
    assert words in error_of(reply)[1] and backend in error_of(reply)[1]
    assert reply.output_text == "Hel", "the output made before the failure is kept"
    assert ai.interactions.get(id_of(reply)).status == "failed"
    assert len(upstreams[backend].requests) == 1, "a foreground call is not retried"


@pytest.mark.parametrize("backend", BACKENDS)
def test_midstream_error_ends_the_stream_with_an_error_event(
    backend: str, ai: genai.Client, upstreams: Upstreams
) -> None:
    script, words = midstream_error_script(backend)
    upstreams[backend].add(script)
    stream = list(ai.interactions.create(model=MODEL[backend], input="Hello?", stream=True))
    kinds = [e.event_type for e in stream]
    assert kinds[-1] == "error", kinds  # the error event, then the stream closes
    assert "interaction.completed" not in kinds
    assert words in stream[-1].error.message
    assert "".join(e.delta.text for e in stream if e.event_type == "step.delta") == "Hel"
    got = ai.interactions.get(stream[0].interaction.id)
    assert got.status == "failed" and got.output_text == "Hel"


def test_connection_cut_mid_answer_fails_the_interaction(ai: genai.Client, upstreams: Upstreams) -> None:
    chunks = [gm.chunk([{"text": "Hel"}]), gm.chunk([{"text": "lo"}], finish="STOP")]
    upstreams.gemini.add(gm.script(chunks, abort_after=1))
    reply = create(ai, model=MODEL["gemini"], input="Hello?")
    assert reply.status == "failed"
    assert reply.output_text == "Hel"
    assert "gemini" in error_of(reply)[1]


# ---------------------------------------------------------------------------------------------------------
# Foreground upstream errors: 429, 400, timeout, unreachable, broken


RATE_LIMITED = {
    "gemini": (
        gm.gemini_error(
            429, "Resource has been exhausted (e.g. check quota).", "RESOURCE_EXHAUSTED", {"Retry-After": "7"}
        ),
        "Resource has been exhausted",
        "7",
    ),
    "openai": (
        oa.openai_error(
            429, "Rate limit reached for gpt-4o", "rate_limit_exceeded", {"retry-after-ms": "3000"}
        ),
        "Rate limit reached for gpt-4o",
        "3",
    ),
    "anthropic": (
        an.anthropic_error(
            429, "rate_limit_error", "Too many request tokens per minute", {"retry-after": "12"}
        ),
        "Too many request tokens per minute",
        "12",
    ),
}


@pytest.mark.parametrize("backend", BACKENDS)
def test_upstream_429_passes_through_with_retry_after(
    backend: str, ai: genai.Client, upstreams: Upstreams
) -> None:
    script, words, retry_after = RATE_LIMITED[backend]
    upstreams[backend].add(script)
    with pytest.raises(RateLimitError) as caught:
        create(ai, model=MODEL[backend], input="hi")
    error = caught.value
    assert error.status_code == 429
    assert error.response.headers["retry-after"] == retry_after
    assert words in str(error) and backend in str(error)
    assert len(upstreams[backend].requests) == 1


def test_fractional_retry_after_is_rounded_up(ai: genai.Client, upstreams: Upstreams) -> None:
    upstreams.openai.add(oa.openai_error(429, "Slow down", "rate_limit_exceeded", {"retry-after-ms": "3200"}))
    with pytest.raises(RateLimitError) as caught:
        create(ai, model=MODEL["openai"], input="hi")
    assert caught.value.response.headers["retry-after"] == "4"


def test_retry_after_relayed_by_litellm_reaches_the_client(ai: genai.Client, upstreams: Upstreams) -> None:
    """An OpenAI-compatible LiteLLM proxy says the provider's wait only as `llm_provider-retry-after`."""
    headers = {"llm_provider-retry-after": "17"}
    upstreams.openai.add(oa.openai_error(429, "Rate limit reached", "rate_limit_error", headers))
    with pytest.raises(RateLimitError) as caught:
        create(ai, model=MODEL["openai"], input="hi")
    assert caught.value.response.headers["retry-after"] == "17"


UPSTREAM_400 = {
    "gemini": (
        gm.gemini_error(400, "Request contains an invalid argument.", "INVALID_ARGUMENT"),
        "Request contains an invalid argument.",
    ),
    "openai": (
        oa.openai_error(400, "Invalid 'messages[0].content': string too long.", "invalid_request_error"),
        "Invalid 'messages[0].content': string too long.",
    ),
    "anthropic": (
        an.anthropic_error(400, "invalid_request_error", "messages: roles must alternate"),
        "messages: roles must alternate",
    ),
}


@pytest.mark.parametrize("backend", BACKENDS)
def test_upstream_400_is_our_400_with_its_message(
    backend: str, ai: genai.Client, upstreams: Upstreams, e2e_app: ThreadedApp, api_key: str
) -> None:
    script, words = UPSTREAM_400[backend]
    upstreams[backend].add(script)
    with pytest.raises(BadRequestError) as caught:
        create(ai, model=MODEL[backend], input="hi")
    assert caught.value.status_code == 400
    assert words in str(caught.value) and backend in str(caught.value)
    assert len(upstreams[backend].requests) == 1
    # the caller got no id: nothing was kept
    with SyncRedis.from_url(e2e_app.redis_url) as redis:
        assert list(redis.scan_iter(match=f"ix:{{{tenant_of(api_key)}}}:*")) == []


def test_upstream_timeout_is_504_naming_the_backend(ai: genai.Client, upstreams: Upstreams) -> None:
    """`gemini-slow-*` has a 0.5 s read timeout; the fake sends its headers, then nothing for 5 s."""
    upstreams.gemini.add(gm.gemini_text_script("late", first_chunk_delay=5.0))
    started = time.monotonic()
    with pytest.raises(InternalServerError) as caught:
        create(ai, model="gemini-slow-1", input="hi")
    took = time.monotonic() - started
    assert caught.value.status_code == 504
    message = str(caught.value)
    assert "gemini" in message and "timed out" in message
    assert took < 4.5, f"the read timeout fired after {took:.2f} s"
    # our side hung up on the upstream
    until(lambda: upstreams.gemini.disconnects, timeout=5)


def test_unreachable_upstream_is_502_naming_the_backend(ai: genai.Client) -> None:
    with pytest.raises(InternalServerError) as caught:
        create(ai, model="dead-model", input="hi")
    assert caught.value.status_code == 502
    message = str(caught.value)
    assert "openai" in message and "connect" in message.lower()


@pytest.mark.parametrize(
    "script",
    [
        an.anthropic_error(500, "api_error", "Internal server error"),
        an.script([an.message_start()], abort_after=0),
    ],
    ids=["500", "cut-before-output"],
)
def test_broken_upstream_is_502_naming_the_backend(
    script: Script, ai: genai.Client, upstreams: Upstreams
) -> None:
    upstreams.anthropic.add(script)
    with pytest.raises(InternalServerError) as caught:
        create(ai, model=MODEL["anthropic"], input="hi")
    assert caught.value.status_code == 502
    assert "anthropic" in str(caught.value)
    assert len(upstreams.anthropic.requests) == 1


# ---------------------------------------------------------------------------------------------------------
# Built-in tools a backend cannot run


@pytest.mark.parametrize(
    ("backend", "tool", "name"),
    [
        ("anthropic", {"type": "google_search"}, "google_search"),
        ("openai", {"type": "code_execution"}, "code_execution"),
        ("anthropic", {"type": "url_context"}, "url_context"),
    ],
)
@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
def test_builtin_tool_the_backend_cannot_run_is_a_400(
    backend: str, tool: dict[str, Any], name: str, background: bool, ai: genai.Client, upstreams: Upstreams
) -> None:
    with pytest.raises(BadRequestError) as caught:
        create(
            ai,
            model=MODEL[backend],
            input="Search the web",
            tools=[WEATHER_TOOL, tool],
            background=background,
        )
    message = str(caught.value)
    assert name in message and backend in message
    assert upstreams[backend].requests == []


def test_builtin_tools_pass_through_to_gemini(ai: genai.Client, upstreams: Upstreams) -> None:
    upstreams.gemini.add(gm.gemini_text_script("Found it."))
    tools = [{"type": "google_search"}, {"type": "url_context"}, {"type": "code_execution"}]
    reply = create(ai, model=MODEL["gemini"], input="Search", tools=tools)
    assert reply.status == "completed"
    assert only_request(upstreams.gemini).json()["tools"] == [
        {"googleSearch": {}},
        {"urlContext": {}},
        {"codeExecution": {}},
    ]


# ---------------------------------------------------------------------------------------------------------
# One chain, three providers


def anthropic_think_then_call() -> Script:
    events = [
        an.message_start(),
        an.block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        an.block_delta(0, {"type": "thinking_delta", "thinking": "London too."}),
        an.block_delta(0, {"type": "signature_delta", "signature": "EqClaudeChainSig"}),
        an.block_stop(0),
        *an.text_block(1, "Checking."),
        an.block_start(2, {"type": "tool_use", "id": "toolu_01london", "name": "get_weather", "input": {}}),
        an.block_delta(2, {"type": "input_json_delta", "partial_json": '{"city": "London"}'}),
        an.block_stop(2),
        *an.message_end("tool_use"),
    ]
    return an.script(events)


def test_three_turn_chain_across_three_backends(
    ai: genai.Client, api: httpx.Client, upstreams: Upstreams
) -> None:
    """Gemini calls a tool; Anthropic gets the result, thinks and calls another; OpenAI gets that result and
    answers; back on Gemini, the whole conversation is still right. Ids stay paired, signatures stay home."""
    upstreams.gemini.add(
        gm.gemini_function_call_script("get_weather", {"city": "Paris"}, signature="Zm4tc2ln")
    )
    upstreams.anthropic.add(anthropic_think_then_call())
    upstreams.openai.add(oa.openai_text_script("Paris is sunny and London is rainy."))
    upstreams.gemini.add(gm.gemini_text_script("Sunny, then rainy."))

    one = create(ai, model=MODEL["gemini"], input="Weather in Paris and London?", tools=[WEATHER_TOOL])
    assert one.status == "requires_action"
    paris = step_of(one, "function_call")

    two = create(
        ai,
        model=MODEL["anthropic"],
        previous_interaction_id=one.id,
        input=[{"type": "function_result", "call_id": paris.id, "name": "get_weather", "result": "sunny"}],
        tools=[WEATHER_TOOL],
    )
    assert two.status == "requires_action"
    assert step_types(two) == ["thought", "model_output", "function_call"]
    london = step_of(two, "function_call")
    assert london.id == "toolu_01london" and london.arguments == {"city": "London"}

    three = create(
        ai,
        model=MODEL["openai"],
        previous_interaction_id=two.id,
        input=[{"type": "function_result", "call_id": london.id, "result": "rainy"}],
        tools=[WEATHER_TOOL],
    )
    assert three.status == "completed"
    assert three.output_text == "Paris is sunny and London is rainy."

    four = create(ai, model=MODEL["gemini"], previous_interaction_id=three.id, input="Short version?")
    assert four.output_text == "Sunny, then rainy."

    # Anthropic: the Gemini call and its result, as tool_use / tool_result with the same id, no signature
    anthropic = only_request(upstreams.anthropic).json()
    assert anthropic["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and London?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": paris.id, "name": "get_weather", "input": {"city": "Paris"}}
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": paris.id, "content": "sunny"}]},
    ]
    assert "Zm4tc2ln" not in json.dumps(anthropic)

    # OpenAI: both calls, each answered by a tool message with its id; no provider's signature
    openai = only_request(upstreams.openai).json()
    messages = openai["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant", "tool"]
    assert messages[0] == {"role": "user", "content": "Weather in Paris and London?"}
    assert [c["id"] for c in messages[1]["tool_calls"]] == [paris.id]
    assert json.loads(messages[1]["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}
    assert messages[2] == {"role": "tool", "tool_call_id": paris.id, "content": "sunny"}
    assert messages[3]["content"] == "Checking."
    assert [c["id"] for c in messages[3]["tool_calls"]] == ["toolu_01london"]
    assert json.loads(messages[3]["tool_calls"][0]["function"]["arguments"]) == {"city": "London"}
    assert messages[4] == {"role": "tool", "tool_call_id": "toolu_01london", "content": "rainy"}
    raw = json.dumps(openai)
    assert "Zm4tc2ln" not in raw and "EqClaudeChainSig" not in raw

    # Gemini again: its own signature back on its own call, Anthropic's thinking left out, results by name
    gemini = upstreams.gemini.requests[1].json()
    assert gemini["contents"] == [
        {"role": "user", "parts": [{"text": "Weather in Paris and London?"}]},
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                    "thoughtSignature": "Zm4tc2ln",
                }
            ],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "get_weather", "response": {"result": "sunny"}}}],
        },
        {
            "role": "model",
            "parts": [
                {"text": "Checking."},
                {"functionCall": {"name": "get_weather", "args": {"city": "London"}}},
            ],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "get_weather", "response": {"result": "rainy"}}}],
        },
        {"role": "model", "parts": [{"text": "Paris is sunny and London is rainy."}]},
        {"role": "user", "parts": [{"text": "Short version?"}]},
    ]
    assert "EqClaudeChainSig" not in json.dumps(gemini)

    # each stored turn: its own input, then its output
    timelines = [[s["type"] for s in raw_interaction(api, x.id)["steps"]] for x in (one, two, three, four)]
    assert timelines == [
        ["user_input", "thought", "function_call"],
        ["function_result", "thought", "model_output", "function_call"],
        ["function_result", "model_output"],
        ["user_input", "model_output"],
    ]


# ---------------------------------------------------------------------------------------------------------
# More pairing: parallel calls answered out of order, unanswered calls, stateless streams


def parallel_calls_script(backend: str) -> Script:
    """Two calls in one turn: Paris first, London second."""
    if backend == "gemini":
        parts: list[dict[str, Any]] = [
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "cGFy"},
            {"functionCall": {"name": "get_weather", "args": {"city": "London"}}},
        ]
        return gm.script([gm.chunk(parts, finish="STOP", meta=gm.usage())])
    if backend == "openai":
        calls = [
            oa.chunk(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "index": i,
                            "id": f"call_{city.lower()}",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": ""},
                        }
                    ],
                }
            )
            for i, city in enumerate(("Paris", "London"))
        ]
        frags = [
            oa.chunk({"tool_calls": [{"index": i, "function": {"arguments": json.dumps({"city": city})}}]})
            for i, city in enumerate(("Paris", "London"))
        ]
        chunks = [calls[0], frags[0], calls[1], frags[1], oa.chunk({}, finish="tool_calls"), oa.usage_chunk()]
        return oa.script(chunks)
    events: list[dict[str, Any]] = [an.message_start()]
    for index, city in enumerate(("Paris", "London")):
        block = {"type": "tool_use", "id": f"toolu_{city.lower()}", "name": "get_weather", "input": {}}
        events += [
            an.block_start(index, block),
            an.block_delta(index, {"type": "input_json_delta", "partial_json": json.dumps({"city": city})}),
            an.block_stop(index),
        ]
    return an.script([*events, *an.message_end("tool_use")])


@pytest.mark.parametrize("backend", BACKENDS)
def test_parallel_calls_answered_out_of_order_stay_paired(
    backend: str, ai: genai.Client, upstreams: Upstreams
) -> None:
    fake = upstreams[backend]
    fake.add(parallel_calls_script(backend), text_script(backend, "Sunny and rainy."))
    first = create(ai, model=MODEL[backend], input="Paris and London?", tools=[WEATHER_TOOL])
    assert first.status == "requires_action"
    calls = calls_of(first)
    assert [c.arguments["city"] for c in calls] == ["Paris", "London"]
    assert len({c.id for c in calls}) == 2
    paris, london = calls
    # answered London first
    second = create(
        ai,
        model=MODEL[backend],
        previous_interaction_id=first.id,
        input=[
            {"type": "function_result", "call_id": london.id, "name": "get_weather", "result": "rainy"},
            {"type": "function_result", "call_id": paris.id, "name": "get_weather", "result": "sunny"},
        ],
        tools=[WEATHER_TOOL],
    )
    assert second.status == "completed"
    body = fake.requests[1].json()
    if backend == "gemini":
        # Gemini pairs responses with calls by position: they go back in the order of the calls
        assert body["contents"][1:] == [
            {
                "role": "model",
                "parts": [
                    {
                        "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                        "thoughtSignature": "cGFy",
                    },
                    {"functionCall": {"name": "get_weather", "args": {"city": "London"}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "get_weather", "response": {"result": "sunny"}}},
                    {"functionResponse": {"name": "get_weather", "response": {"result": "rainy"}}},
                ],
            },
        ]
    elif backend == "openai":
        messages = body["messages"]
        assistant = messages[1]
        assert [
            (c["id"], json.loads(c["function"]["arguments"])["city"]) for c in assistant["tool_calls"]
        ] == [
            ("call_paris", "Paris"),
            ("call_london", "London"),
        ]
        tools = {m["tool_call_id"]: m["content"] for m in messages[2:]}
        assert tools == {"call_paris": "sunny", "call_london": "rainy"}
        assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool"]
    else:
        assistant, results = body["messages"][1], body["messages"][2]
        assert [(b["id"], b["input"]["city"]) for b in assistant["content"]] == [
            ("toolu_paris", "Paris"),
            ("toolu_london", "London"),
        ]
        assert results["role"] == "user"
        assert {b["tool_use_id"]: b["content"] for b in results["content"]} == {
            "toolu_paris": "sunny",
            "toolu_london": "rainy",
        }


STAND_IN_TEXT = "No result was provided for this call."


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_call_left_unanswered_gets_a_stand_in_result(
    backend: str, ai: genai.Client, upstreams: Upstreams
) -> None:
    """A client that replies with text instead of a result: the providers reject an unanswered call."""
    fake = upstreams[backend]
    fake.add(call_script(backend), text_script(backend, "Fine."))
    first = create(ai, model=MODEL[backend], input="Weather?", tools=[WEATHER_TOOL])
    call = step_of(first, "function_call")
    create(ai, model=MODEL[backend], previous_interaction_id=first.id, input="Never mind.")
    if backend == "gemini":
        assert fake.requests[1].json()["contents"][-1] == {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"error": STAND_IN_TEXT}}},
                {"text": "Never mind."},
            ],
        }
        return
    messages = fake.requests[1].json()["messages"]
    if backend == "openai":
        assert messages[2]["role"] == "tool" and messages[2]["tool_call_id"] == call.id
        assert messages[3] == {"role": "user", "content": "Never mind."}
    else:
        last = messages[-1]
        assert last["role"] == "user"
        assert last["content"][0]["type"] == "tool_result" and last["content"][0]["tool_use_id"] == call.id
        assert last["content"][0]["is_error"] is True
        assert last["content"][1] == {"type": "text", "text": "Never mind."}


@pytest.mark.parametrize("backend", BACKENDS)
def test_parallel_calls_answered_in_part_get_a_stand_in_for_the_rest(
    backend: str, ai: genai.Client, upstreams: Upstreams
) -> None:
    """Two calls, one result: the upstream still gets one result per call (issue 10, item 9)."""
    fake = upstreams[backend]
    fake.add(parallel_calls_script(backend), text_script(backend, "Rainy in London."))
    first = create(ai, model=MODEL[backend], input="Paris and London?", tools=[WEATHER_TOOL])
    paris, london = calls_of(first)
    second = create(
        ai,
        model=MODEL[backend],
        previous_interaction_id=first.id,
        input=[{"type": "function_result", "call_id": london.id, "result": "rainy"}],
        tools=[WEATHER_TOOL],
    )
    assert second.status == "completed" and second.output_text == "Rainy in London."
    body = fake.requests[1].json()
    if backend == "gemini":
        assert body["contents"][-1] == {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"error": STAND_IN_TEXT}}},
                {"functionResponse": {"name": "get_weather", "response": {"result": "rainy"}}},
            ],
        }
    elif backend == "openai":
        tools = [(m["tool_call_id"], m["content"]) for m in body["messages"] if m["role"] == "tool"]
        assert tools == [(london.id, "rainy"), (paris.id, STAND_IN_TEXT)]
    else:
        results = body["messages"][-1]["content"]
        assert [(b["tool_use_id"], b["content"], b.get("is_error")) for b in results] == [
            (london.id, "rainy", None),
            (paris.id, STAND_IN_TEXT, True),
        ]


@pytest.mark.parametrize("backend", BACKENDS)
def test_stateless_stream(backend: str, ai: genai.Client, upstreams: Upstreams) -> None:
    upstreams[backend].add(text_script(backend, "No memory here"))
    history = [
        {"type": "user_input", "content": [{"type": "text", "text": "What is 2+2?"}]},
        {"type": "model_output", "content": [{"type": "text", "text": "4"}]},
        {"type": "user_input", "content": [{"type": "text", "text": "Times 3?"}]},
    ]
    stream = list(ai.interactions.create(model=MODEL[backend], input=history, store=False, stream=True))
    assert stream[-1].event_type == "interaction.completed"
    assert stream[-1].interaction.status == "completed"
    text = "".join(e.delta.text for e in stream if e.event_type == "step.delta")
    assert text == "No memory here"
    body = only_request(upstreams[backend]).json()
    assert user_text_of(backend, body) == "Times 3?"
    assert "4" in json.dumps(body)


def test_gemini_prompt_block_fails_with_a_clear_error(ai: genai.Client, upstreams: Upstreams) -> None:
    blocked = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": gm.usage(output=0)}
    upstreams.gemini.add(gm.script([blocked]))
    reply = create(ai, model=MODEL["gemini"], input="Something bad")
    assert reply.status == "failed"
    code, message = error_of(reply)
    assert code == "content_blocked" and "SAFETY" in message


@pytest.mark.parametrize("backend", BACKENDS)
def test_stream_with_an_upstream_error_before_any_output(
    backend: str, ai: genai.Client, upstreams: Upstreams
) -> None:
    """stream=true and the upstream refuses at once (429): the client learns the status and the message."""
    script, words, retry_after = RATE_LIMITED[backend]
    upstreams[backend].add(script)
    try:
        stream = list(ai.interactions.create(model=MODEL[backend], input="hi", stream=True))
    except RateLimitError as exc:  # an HTTP 429 before the stream starts
        assert exc.response.headers["retry-after"] == retry_after
        assert words in str(exc) and backend in str(exc)
    else:  # or an SSE `error` event: it must still say what happened
        assert stream[-1].event_type == "error"
        message = stream[-1].error.message
        assert words in message and backend in message and "429" in stream[-1].error.code + message
    assert len(upstreams[backend].requests) == 1


# ---------------------------------------------------------------------------------------------------------
# Other modalities, the overall deadline, extended thinking across a tool call, cancel of a foreground run

WAV = base64.b64encode(b"RIFF\x24\x00\x00\x00WAVEfmt ").decode()
PDF = base64.b64encode(b"%PDF-1.4\n%%EOF\n").decode()


@pytest.mark.parametrize("backend", BACKENDS)
def test_audio_video_and_documents_reach_the_upstream_natively(
    backend: str, ai: genai.Client, upstreams: Upstreams
) -> None:
    fake = upstreams[backend]
    fake.add(text_script(backend, "Got them"))
    media: dict[str, list[dict[str, Any]]] = {
        "gemini": [
            {"type": "audio", "mime_type": "audio/wav", "data": WAV},
            {
                "type": "video",
                "mime_type": "video/mp4",
                "uri": "https://example.com/v.mp4",
                "processing": {"fps": 2, "start_offset": "1s"},
            },
            {"type": "document", "mime_type": "application/pdf", "data": PDF},
        ],
        "openai": [
            {"type": "audio", "mime_type": "audio/wav", "data": WAV},
            {"type": "document", "mime_type": "application/pdf", "data": PDF},
        ],
        "anthropic": [
            {"type": "document", "mime_type": "application/pdf", "data": PDF},
            {"type": "document", "mime_type": "application/pdf", "uri": "https://example.com/a.pdf"},
        ],
    }
    reply = create(ai, model=MODEL[backend], input=[{"type": "text", "text": "Look"}, *media[backend]])
    assert reply.status == "completed", reply.errors
    body = only_request(fake).json()
    if backend == "gemini":
        assert body["contents"][0]["parts"][1:] == [
            {"inlineData": {"mimeType": "audio/wav", "data": WAV}},
            {
                "fileData": {"mimeType": "video/mp4", "fileUri": "https://example.com/v.mp4"},
                "videoMetadata": {"fps": 2, "startOffset": "1s"},
            },
            {"inlineData": {"mimeType": "application/pdf", "data": PDF}},
        ]
    elif backend == "openai":
        content = body["messages"][0]["content"]
        assert content[1] == {"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}}
        assert content[2]["type"] == "file"
        assert content[2]["file"]["file_data"] == f"data:application/pdf;base64,{PDF}"
    else:
        assert body["messages"][0]["content"][1:] == [
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF}},
            {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
        ]


def test_overall_deadline_ends_a_steady_stream(ai: genai.Client, upstreams: Upstreams) -> None:
    """`gemini-brief-*` has a 0.6 s deadline: a stream that never pauses long still ends there, keeping what
    it said; the upstream connection is closed."""
    upstreams.gemini.add(words_script("gemini", count=50, delay=0.1))
    started = time.monotonic()
    reply = create(ai, model="gemini-brief-1", input="Count")
    took = time.monotonic() - started
    assert reply.status == "failed"
    code, message = error_of(reply)
    assert code == "upstream_timeout" and "gemini" in message
    assert output_text_of(reply).split()[:2] == ["w0", "w1"]
    assert took < 4, took
    until(lambda: upstreams.gemini.disconnects, timeout=5)


def test_extended_thinking_across_a_tool_call(ai: genai.Client, upstreams: Upstreams) -> None:
    """Anthropic rejects thinking when the last assistant turn is a tool call without a thinking block: on its
    own chain the thinking block is sent back first; after another provider's call, thinking is left off."""
    thinking = {"thinking_level": "high"}
    upstreams.anthropic.add(anthropic_think_then_call(), an.anthropic_text_script("Rainy."))
    first = create(
        ai, model=MODEL["anthropic"], input="London?", tools=[WEATHER_TOOL], generation_config=thinking
    )
    call = step_of(first, "function_call")
    create(
        ai,
        model=MODEL["anthropic"],
        previous_interaction_id=first.id,
        input=[{"type": "function_result", "call_id": call.id, "result": "rainy"}],
        tools=[WEATHER_TOOL],
        generation_config=thinking,
    )
    body = upstreams.anthropic.requests[1].json()
    assert body["thinking"]["type"] == "enabled"
    assert body["max_tokens"] > body["thinking"]["budget_tokens"]
    assistant = body["messages"][1]["content"]
    assert assistant[0] == {"type": "thinking", "thinking": "London too.", "signature": "EqClaudeChainSig"}
    assert [b["type"] for b in assistant] == ["thinking", "text", "tool_use"]

    upstreams.reset()
    upstreams.gemini.add(gm.gemini_function_call_script("get_weather", {"city": "Rome"}))
    upstreams.anthropic.add(an.anthropic_text_script("Warm."))
    one = create(ai, model=MODEL["gemini"], input="Rome?", tools=[WEATHER_TOOL])
    rome = step_of(one, "function_call")
    two = create(
        ai,
        model=MODEL["anthropic"],
        previous_interaction_id=one.id,
        input=[{"type": "function_result", "call_id": rome.id, "result": "warm"}],
        tools=[WEATHER_TOOL],
        generation_config=thinking,
    )
    assert two.status == "completed"
    body = only_request(upstreams.anthropic).json()
    assert "thinking" not in body
    assert body["messages"][1]["content"][0]["type"] == "tool_use"


def test_cancel_of_a_foreground_stream_from_another_connection(
    ai: genai.Client, api: httpx.Client, upstreams: Upstreams
) -> None:
    """A foreground run lives in the web process that took the create; a cancel from another connection
    stops it there, closes the upstream connection and ends the first client's stream as `cancelled`."""
    fake = upstreams.gemini
    fake.add(words_script("gemini", count=100, delay=0.1))
    seen: list[dict[str, Any]] = []
    failure: list[BaseException] = []

    def follow() -> None:
        try:
            body = {"model": MODEL["gemini"], "input": "Count", "stream": True}
            with api.stream("POST", "/v1beta/interactions", json=body, timeout=15) as response:
                seen.extend(sse_events(response))
        except BaseException as exc:  # reported by the test thread
            failure.append(exc)

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    until(lambda: len(text_of(seen).split()) >= 3, timeout=10)
    interaction_id = seen[0]["interaction"]["id"]
    asked = time.monotonic()
    cancelled = ai.interactions.cancel(interaction_id)
    until(lambda: fake.disconnects, timeout=5)
    print(f"\nforeground cancel -> upstream connection closed: {(fake.disconnects[0] - asked) * 1000:.0f} ms")
    reader.join(timeout=10)
    assert not reader.is_alive() and not failure, failure
    assert cancelled.status == "cancelled"
    assert seen[-1]["event_type"] == "interaction.completed"
    assert seen[-1]["interaction"]["status"] == "cancelled"
    text = text_of(seen)
    assert text.startswith(output_text_of(cancelled))
    assert ai.interactions.get(interaction_id).output_text == text
