"""Google's Interactions API as an upstream: the stateless create it is sent, its event stream decoded from
raw bytes, and the backend against a fake over real HTTP (Gemini API and Vertex forms, errors)."""

from __future__ import annotations

import json
from typing import Any, Final

import pytest

from server.errors import InvalidArgument
from server.protocol.content import TextContent
from server.protocol.deltas import ArgumentsDelta, TextDelta, ThoughtSignatureDelta, ThoughtSummaryDelta
from server.protocol.steps import (
    CodeExecutionCallStep,
    FunctionCallStep,
    FunctionResultStep,
    GoogleSearchCallStep,
    GoogleSearchResultStep,
    ModelOutputStep,
    Step,
    ThoughtStep,
)
from server.settings import ModelRoute
from server.upstream import native
from server.upstream.base import (
    Finished,
    StepEnded,
    StepStarted,
    UpstreamError,
    UpstreamEvent,
    UpstreamRequest,
    UsageReported,
)
from server.upstream.interactions import InteractionsBackend
from server.upstream.interactions.decode import InteractionsDecoder
from server.upstream.interactions.request import build_body as build_create
from tests.fakes import google_interactions as gi
from tests.fakes.gemini import gemini_error
from tests.fakes.http import FakeServer, Script

from . import helpers
from .helpers import deltas, streamed, user

KEY_ENV = "IX_TEST_INTERACTIONS_KEY"
BACKEND: Final = "interactions"


def request(history: list[Step], **config: Any) -> UpstreamRequest:
    return helpers.request(history, "gemini-3-flash-preview", **config)


def build_body(request: UpstreamRequest) -> dict[str, Any]:
    return helpers.sent(build_create(request, BACKEND, request.upstream_model))


def decode(raw: bytes) -> tuple[list[UpstreamEvent], InteractionsDecoder]:
    decoder = InteractionsDecoder()
    return decoder.feed_bytes(raw) + decoder.close(), decoder


def raw(script: Script) -> bytes:
    assert script.chunks is not None
    return b"".join(script.chunks)


def text_of(events: list[UpstreamEvent]) -> str:
    return "".join(d.text for d in deltas(events) if isinstance(d, TextDelta))


# ---------------------------------------------------------------------------------------------------------
# The create sent


def test_the_whole_conversation_goes_as_a_stateless_create() -> None:
    history: list[Step] = [
        user("Weather in Paris?"),
        FunctionCallStep(id="call_1", name="get_weather", arguments={"city": "Paris"}),
        FunctionResultStep(call_id="call_1", name="get_weather", result="sunny"),
        ModelOutputStep(content=[TextContent(text="Sunny.")]),
        user("And tomorrow?"),
    ]
    tools = [
        {"type": "function", "name": "get_weather", "parameters": {"type": "object"}},
        {"type": "google_search"},
        {"type": "mcp_server", "name": "docs", "url": "https://mcp.example.com/mcp"},
    ]
    body = build_body(
        request(
            history,
            system_instruction="Be terse.",
            tools=tools,
            generation_config={"temperature": 0.2, "max_output_tokens": 64, "thinking_level": "low"},
            response_mime_type="application/json",
        )
    )
    assert body["store"] is False and body["stream"] is True
    assert body["model"] == "gemini-3-flash-preview"
    assert [step["type"] for step in body["input"]] == [
        "user_input",
        "function_call",
        "function_result",
        "model_output",
        "user_input",
    ]
    assert body["input"][1]["arguments"] == {"city": "Paris"}
    assert body["input"][2]["result"] == "sunny"
    assert body["system_instruction"] == "Be terse."
    # MCP servers are run here (their tools go as functions through the tool loop), not by Google
    assert [tool["type"] for tool in body["tools"]] == ["function", "google_search"]
    assert body["generation_config"] == {"temperature": 0.2, "max_output_tokens": 64, "thinking_level": "low"}
    assert body["response_mime_type"] == "application/json"
    for absent in ("previous_interaction_id", "background", "agent", "webhook_config"):
        assert absent not in body


def test_only_this_backends_signatures_go_back_and_unsealed() -> None:
    ours = native.wrap(BACKEND, "Z29vZ2xlLXNpZw==")
    history: list[Step] = [
        user("Think"),
        ThoughtStep(signature=ours, summary=[TextContent(text="mine")]),
        ThoughtStep(signature=native.wrap("anthropic", "c2ln"), summary=[TextContent(text="claude's")]),
        ThoughtStep(summary=[TextContent(text="unsigned")]),
        CodeExecutionCallStep(id="c1", arguments={"code": "1+1"}, signature=native.wrap("gemini", "Zm9v")),
        GoogleSearchCallStep(id="g1", arguments={"queries": ["q"]}, signature=native.wrap(BACKEND, "c2Vh")),
        ModelOutputStep(content=[TextContent(text="2")]),
    ]
    steps = build_body(request(history))["input"]
    assert [step["type"] for step in steps] == [
        "user_input",
        "thought",
        "code_execution_call",
        "google_search_call",
        "model_output",
    ]
    assert steps[1]["signature"] == "Z29vZ2xlLXNpZw==" and steps[1]["summary"][0]["text"] == "mine"
    assert "signature" not in steps[2], "another backend's seal is not Google's to check"
    assert steps[2]["arguments"] == {"code": "1+1"}
    assert steps[3]["signature"] == "c2Vh"


def test_a_built_in_tool_is_run_here_and_refused_by_other_backends() -> None:
    tools = [{"type": tool} for tool in ("google_search", "code_execution", "url_context", "google_maps")]
    backend = InteractionsBackend(ModelRoute(match="*", backend=BACKEND))
    backend.check(request([user("hi")], tools=tools))
    from server.upstream.openai import OpenAIBackend

    with pytest.raises(InvalidArgument) as caught:
        OpenAIBackend(ModelRoute(match="*", backend="openai")).check(request([user("hi")], tools=tools))
    assert "google_search" in str(caught.value) and "openai" in str(caught.value)


def test_an_agents_turn_is_a_remote_background_create() -> None:
    config = {"agent": "deep-research-pro", "agent_config": {"type": "deep-research"}}
    agent = request([user("Research this")], **config)
    agent.background = True
    body = helpers.sent(build_create(agent, BACKEND, "deep-research-pro-preview", remote=True))
    assert body["agent"] == "deep-research-pro-preview" and "model" not in body
    assert body["agent_config"] == {"type": "deep-research"}
    assert body["background"] is True and body["stream"] is True
    assert body.get("store", True) is True, "Google keeps background interactions only stored"


def test_an_agent_runs_only_in_the_background_and_without_mcp_servers() -> None:
    backend = InteractionsBackend(ModelRoute(match="*", backend=BACKEND))
    foreground = request([user("hi")], agent="deep-research-pro")
    with pytest.raises(InvalidArgument) as caught:
        backend.check(foreground)
    assert caught.value.field == "background"
    mcp = {"type": "mcp_server", "name": "docs", "url": "https://mcp.example.com/mcp"}
    with_mcp = request([user("hi")], agent="deep-research-pro", tools=[mcp])
    with_mcp.background = True
    with pytest.raises(InvalidArgument) as caught:
        backend.check(with_mcp)
    assert caught.value.field == "tools[0]"
    foreground.background = True
    backend.check(foreground)


# ---------------------------------------------------------------------------------------------------------
# The event stream


def test_decode_text_usage_and_the_remote_id() -> None:
    events, decoder = decode(raw(gi.text_script("Hello from Google")))
    assert text_of(events) == "Hello from Google"
    assert isinstance(events[0], StepStarted) and isinstance(events[0].step, ModelOutputStep)
    usage = [e.usage for e in events if isinstance(e, UsageReported)][-1]
    assert (usage.total_input_tokens, usage.total_output_tokens, usage.total_thought_tokens) == (5, 7, 3)
    assert events[-1] == Finished(status="completed")
    assert decoder.remote_id == gi.REMOTE_ID


def test_decode_thought_signature_is_sealed_as_this_backends() -> None:
    events, _ = decode(raw(gi.thought_script("Z29vZ2xlLXNpZw==", "42")))
    [summary] = [d for d in deltas(events) if isinstance(d, ThoughtSummaryDelta)]
    assert isinstance(summary.content, TextContent) and summary.content.text == "thinking"
    [signature] = [d for d in deltas(events) if isinstance(d, ThoughtSignatureDelta)]
    assert native.native_for(signature.signature, BACKEND) == "Z29vZ2xlLXNpZw=="
    assert native.native_for(signature.signature, "gemini") is None
    assert text_of(events) == "42"


def test_decode_built_in_tool_steps_keep_their_types() -> None:
    events, _ = decode(raw(gi.search_script()))
    starts = [e.step for e in events if isinstance(e, StepStarted)]
    assert [type(s) for s in starts] == [GoogleSearchCallStep, GoogleSearchResultStep, ModelOutputStep]
    call, result = starts[0], starts[1]
    assert isinstance(call, GoogleSearchCallStep) and call.arguments == {"queries": ["weather paris"]}
    assert isinstance(result, GoogleSearchResultStep) and result.call_id == "gs_1"
    assert result.result == [{"url": "https://example.com"}]
    assert sum(isinstance(e, StepEnded) for e in events) == 3
    assert text_of(events) == "Sunny in Paris"


def test_decode_a_built_in_step_signature_is_sealed() -> None:
    call = {"type": "code_execution_call", "id": "c1", "arguments": {"code": "1+1"}, "signature": "c2ln"}
    events, _ = decode(raw(gi.stream([gi.start(0, call), gi.stop(0), gi.completed()])))
    step = events[0]
    assert isinstance(step, StepStarted) and isinstance(step.step, CodeExecutionCallStep)
    assert native.native_for(step.step.signature, BACKEND) == "c2ln"


@pytest.mark.parametrize("whole", [False, True], ids=["streamed", "whole"])
def test_decode_function_call_requires_action(whole: bool) -> None:
    if whole:
        call = {
            "type": "function_call",
            "id": "call_g1",
            "name": "get_weather",
            "arguments": {"city": "Paris"},
        }
        script = gi.stream([gi.start(0, call), gi.stop(0), gi.completed("requires_action")])
    else:
        script = gi.function_call_script("get_weather", '{"city": "Paris"}')
    events, _ = decode(raw(script))
    start = events[0]
    assert isinstance(start, StepStarted) and isinstance(start.step, FunctionCallStep)
    assert (start.step.id, start.step.name, start.step.arguments) == ("call_g1", "get_weather", {})
    fragments = [d.arguments for d in deltas(events) if isinstance(d, ArgumentsDelta)]
    assert json.loads("".join(fragments)) == {"city": "Paris"}
    assert events[-1] == Finished(status="requires_action")


def test_decode_a_failed_remote_interaction_keeps_googles_error() -> None:
    errors = [{"code": "safety", "message": "Blocked by safety filters"}]
    events, _ = decode(raw(gi.stream([*gi.text_events("par"), gi.completed("failed", errors=errors)])))
    end = events[-1]
    assert isinstance(end, Finished) and end.status == "failed"
    assert end.error is not None and end.error.message == "Blocked by safety filters"
    assert text_of(events) == "par"


@pytest.mark.parametrize("status", ["cancelled", "budget_exceeded"])
def test_decode_a_remote_run_ended_at_google_is_a_failed_end_saying_so(status: str) -> None:
    """Cancelled at Google by someone else (or out of budget there): an end, not a stream's fault that
    following the run again could mend."""
    events, decoder = decode(raw(gi.stream([*gi.text_events("par"), gi.completed(status)])))
    end = events[-1]
    assert isinstance(end, Finished) and end.status == "failed" and decoder.ended
    assert end.error is not None and end.error.code == f"upstream_{status}"
    assert f"{gi.REMOTE_ID} ended as {status!r}" in end.error.message
    assert text_of(events) == "par"


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("resource_exhausted", 429),
        ("RESOURCE_EXHAUSTED", 429),
        ("503", 503),
        ("invalid_argument", 400),
        ("something_new", 500),
    ],
)
def test_decode_error_event_after_output(code: str, status: int) -> None:
    decoder = InteractionsDecoder()
    events = decoder.feed_bytes(raw(gi.error_event_script(code, "Quota gone")))
    assert text_of(events) == "partial", "the output before the error comes first"
    with pytest.raises(UpstreamError) as caught:
        decoder.close()
    assert (caught.value.status, caught.value.message, caught.value.backend) == (
        status,
        "Quota gone",
        BACKEND,
    )


def test_decode_a_stream_cut_before_completed_fails() -> None:
    with pytest.raises(UpstreamError, match=r"before interaction\.completed"):
        decode(raw(gi.stream(gi.text_events("half"), done=False)))


def test_decode_skips_event_types_newer_than_this_server() -> None:
    newer = {"event_type": "interaction.thinking_budget_update", "remaining": 3}
    events, _ = decode(raw(gi.stream([newer, *gi.text_events("ok"), gi.completed()])))
    assert text_of(events) == "ok" and events[-1] == Finished(status="completed")


def test_decode_a_known_event_that_breaks_the_types_is_malformed() -> None:
    broken = {"event_type": "step.delta", "index": "zero", "delta": {"type": "text", "text": 5}}
    with pytest.raises(UpstreamError, match="malformed"):
        decode(raw(gi.stream([broken])))


# ---------------------------------------------------------------------------------------------------------
# Over real HTTP


def backend_for(server: FakeServer, **route: Any) -> InteractionsBackend:
    settings = {
        "match": "*",
        "backend": BACKEND,
        "base_url": server.base_url,
        "api_key_env": KEY_ENV,
        **route,
    }
    return InteractionsBackend(ModelRoute(**settings))


async def test_stream_over_http(fake: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "secret-key")
    fake.add(gi.text_script("Hello over HTTP", chunk_delay=0.01))
    events = await streamed(backend_for(fake), request([user("hi")]))
    assert text_of(events) == "Hello over HTTP" and events[-1] == Finished(status="completed")
    sent = fake.requests[0]
    assert (sent.method, sent.path) == ("POST", "/v1beta/interactions")
    assert sent.headers["x-goog-api-key"] == "secret-key"
    assert "authorization" not in sent.headers
    assert sent.headers["accept"] == "text/event-stream"
    body = sent.json()
    assert body["input"] == [{"type": "user_input", "content": [{"type": "text", "text": "hi"}]}]
    assert body["store"] is False


async def test_vertex_form_sends_a_bearer_token_or_an_api_key(
    fake: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "ya29.token")
    fake.add(gi.text_script("ok"))
    base = fake.base_url + "/v1beta1/projects/my-project/locations/global"
    await streamed(backend_for(fake, base_url=base), request([user("hi")]))
    sent = fake.requests[0]
    assert sent.path == "/v1beta1/projects/my-project/locations/global/interactions"
    assert sent.headers["authorization"] == "Bearer ya29.token"
    assert "x-goog-api-key" not in sent.headers
    # an API key (Vertex's express mode) goes as one
    monkeypatch.setenv(KEY_ENV, "AIzaSyExampleExampleExampleExample1234")
    fake.add(gi.text_script("ok"))
    await streamed(backend_for(fake, base_url=base), request([user("hi")]))
    assert fake.requests[1].headers["x-goog-api-key"] == "AIzaSyExampleExampleExampleExample1234"
    assert "authorization" not in fake.requests[1].headers


async def test_base_url_with_version_is_not_doubled(fake: FakeServer) -> None:
    fake.add(gi.text_script("ok"))
    await streamed(backend_for(fake, base_url=fake.base_url + "/v1beta/"), request([user("hi")]))
    assert fake.requests[0].path == "/v1beta/interactions"


async def test_429_with_retry_info(fake: FakeServer) -> None:
    fake.add(gemini_error(429, "Quota exceeded for interactions", "RESOURCE_EXHAUSTED", retry_delay="21s"))
    with pytest.raises(UpstreamError) as caught:
        await streamed(backend_for(fake), request([user("hi")]))
    error = caught.value
    assert (error.status, error.retry_after, error.backend) == (429, 21.0, BACKEND)
    assert error.message == "Quota exceeded for interactions" and error.retryable


async def test_cut_connection_mid_answer_is_a_connection_error(fake: FakeServer) -> None:
    fake.add(gi.text_script("one two three four", abort_after=3))
    with pytest.raises(UpstreamError) as caught:
        await streamed(backend_for(fake), request([user("hi")]))
    assert caught.value.status == 0 and caught.value.retryable
