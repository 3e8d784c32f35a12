"""OpenAI-compatible: request bodies, the chunk decoder on raw bytes, and the backend over real HTTP."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import msgspec
import pytest

from server.errors import InvalidArgument
from server.protocol.content import AudioContent, DocumentContent, ImageContent, TextContent, VideoContent
from server.protocol.deltas import ArgumentsDelta, TextDelta, ThoughtSummaryDelta
from server.protocol.steps import (
    FunctionCallStep,
    FunctionResultStep,
    ModelOutputStep,
    Step,
    ThoughtStep,
    UserInputStep,
)
from server.settings import ModelRoute
from server.upstream import native, openai
from server.upstream.base import (
    Finished,
    StepStarted,
    UpstreamError,
    UpstreamEvent,
    UpstreamRequest,
    UsageReported,
)
from server.upstream.openai import OpenAIBackend, OpenAIDecoder
from tests.fakes.http import FakeServer, drain, sse
from tests.fakes.openai import (
    chunk,
    openai_error,
    openai_midstream_error_script,
    openai_reasoning_script,
    openai_text_script,
    openai_tool_call_script,
    script,
)

from . import helpers
from .helpers import deltas, user

KEY_ENV = "IX_TEST_OPENAI_KEY"


def request(history: list[Step], model: str = "local-model", **config: Any) -> UpstreamRequest:
    return helpers.request(history, model, **config)


def build_body(request: UpstreamRequest, base_url: str = "") -> dict[str, Any]:
    return helpers.sent(openai.build_body(request, base_url))


def decode(raw: bytes) -> list[UpstreamEvent]:
    decoder = OpenAIDecoder()
    return decoder.feed_bytes(raw) + decoder.close()


# ---------------------------------------------------------------------------------------------------------
# Request body


def test_body_messages_and_config() -> None:
    history: list[Step] = [
        UserInputStep(
            content=[
                TextContent(text="look"),
                ImageContent(data="aW1n", mime_type="image/jpeg"),
                ImageContent(uri="https://x/y.png"),
                AudioContent(data="YXVk", mime_type="audio/mpeg"),
                DocumentContent(data="cGRm", mime_type="application/pdf"),
            ]
        ),
        ThoughtStep(signature=native.wrap("gemini", "sig"), summary=[TextContent(text="gemini thought")]),
        FunctionCallStep(id="fc/1", name="weather", arguments={"city": "Paris"}),
        FunctionResultStep(call_id="fc/1", result={"temp": 20}),
        ModelOutputStep(content=[TextContent(text="Sunny.")]),
        user("thanks"),
        user("bye"),
    ]
    body = build_body(
        request(
            history,
            system_instruction="Be brief.",
            generation_config={
                "temperature": 0.5,
                "max_output_tokens": 100,
                "stop_sequences": ["X"],
                "thinking_level": "xhigh",
                "tool_choice": "any",
            },
            tools=[{"type": "function", "name": "weather", "parameters": {"type": "object"}}],
            response_format={"type": "text", "mime_type": "application/json", "schema": {"type": "object"}},
        )
    )
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0.5 and body["max_tokens"] == 100 and body["stop"] == ["X"]
    assert body["reasoning_effort"] == "high"
    assert body["tool_choice"] == "required"
    assert body["tools"] == [
        {"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}
    ]
    assert body["response_format"]["json_schema"]["schema"] == {"type": "object"}
    messages = body["messages"]
    assert messages[0] == {"role": "system", "content": "Be brief."}
    assert messages[1]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,aW1n"}},
        {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
        {"type": "input_audio", "input_audio": {"data": "YXVk", "format": "mp3"}},
        {
            "type": "file",
            "file": {"filename": "document.pdf", "file_data": "data:application/pdf;base64,cGRm"},
        },
    ]
    # the Gemini thought is not sent; the call keeps its (sanitised) id, paired with its result
    assert messages[2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "fc_1",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
            }
        ],
    }
    assert messages[3] == {"role": "tool", "tool_call_id": "fc_1", "content": '{"temp":20}'}
    assert messages[4] == {"role": "assistant", "content": "Sunny."}
    assert messages[5] == {"role": "user", "content": "thanks\nbye"}


def test_unanswered_call_and_orphan_result() -> None:
    history: list[Step] = [
        user("q"),
        FunctionCallStep(id="c1", name="f", arguments={}),
        user("never mind"),
        FunctionResultStep(call_id="unknown", name="g", result="late"),
    ]
    messages = build_body(request(history))["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "user"]
    assert messages[2]["tool_call_id"] == "c1"
    assert messages[3]["content"] == "never mind\nResult of function g: late"


def test_call_answered_in_part_before_the_next_turn() -> None:
    """One of two parallel calls answered, then the model calls again: the open one is answered first."""
    history: list[Step] = [
        user("q"),
        FunctionCallStep(id="c1", name="f"),
        FunctionCallStep(id="c2", name="f"),
        FunctionResultStep(call_id="c1", result="one"),
        FunctionCallStep(id="c3", name="f"),
        FunctionResultStep(call_id="c3", result="three"),
    ]
    messages = build_body(request(history))["messages"]
    assert [(m["role"], m.get("tool_call_id")) for m in messages] == [
        ("user", None),
        ("assistant", None),
        ("tool", "c1"),
        ("tool", "c2"),
        ("assistant", None),
        ("tool", "c3"),
    ]
    assert messages[3]["content"] == "No result was provided for this call."


def test_openai_itself_gets_max_completion_tokens() -> None:
    body = build_body(
        request([user("x")], generation_config={"max_output_tokens": 9, "top_k": 3}),
        "https://api.openai.com/v1",
    )
    assert body["max_completion_tokens"] == 9 and "max_tokens" not in body and "top_k" not in body


def test_check_rejects_builtin_tools_and_video() -> None:
    backend = OpenAIBackend(ModelRoute(match="*", backend="openai"))
    with pytest.raises(InvalidArgument) as caught:
        backend.check(
            request([user("x")], tools=[{"type": "function", "name": "f"}, {"type": "google_search"}])
        )
    assert caught.value.field == "tools[1]" and "google_search" in caught.value.message
    assert "openai" in caught.value.message
    with pytest.raises(InvalidArgument, match="video"):
        backend.check(request([UserInputStep(content=[VideoContent(uri="gs://v")])]))
    with pytest.raises(InvalidArgument, match="audio"):
        backend.check(request([UserInputStep(content=[AudioContent(uri="https://a.wav")])]))


# ---------------------------------------------------------------------------------------------------------
# Decoder


def test_decode_text_and_usage() -> None:
    events = decode(b"".join(openai_text_script("Hello big world").chunks or []))
    assert "".join(d.text for d in deltas(events) if isinstance(d, TextDelta)) == "Hello big world"
    usage = [e.usage for e in events if isinstance(e, UsageReported)][-1]
    assert (usage.total_input_tokens, usage.total_output_tokens, usage.total_tokens) == (9, 4, 13)
    assert events[-1] == Finished(status="completed")


def test_decode_reasoning_becomes_thought() -> None:
    events = decode(b"".join(openai_reasoning_script("Think.", "Done").chunks or []))
    started = [e.step for e in events if isinstance(e, StepStarted)]
    assert [type(s).__name__ for s in started] == ["ThoughtStep", "ModelOutputStep"]
    assert deltas(events)[0] == ThoughtSummaryDelta(content=TextContent(text="Think."))
    usage = [e.usage for e in events if isinstance(e, UsageReported)][-1]
    assert (usage.total_output_tokens, usage.total_thought_tokens) == (4, 6)


def test_decode_tool_call_fragments() -> None:
    events = decode(
        b"".join(openai_tool_call_script("get_weather", ('{"ci', 'ty": "Pa', 'ris"}')).chunks or [])
    )
    call = next(e.step for e in events if isinstance(e, StepStarted))
    assert call == FunctionCallStep(id="call_abc123", name="get_weather", arguments={})
    fragments = [d.arguments for d in deltas(events) if isinstance(d, ArgumentsDelta)]
    assert fragments == ['{"ci', 'ty": "Pa', 'ris"}']
    assert msgspec.json.decode("".join(fragments)) == {"city": "Paris"}
    assert events[-1] == Finished(status="requires_action")


def test_decode_parallel_tool_calls() -> None:
    calls = [
        {"index": 0, "id": "a", "function": {"name": "f", "arguments": '{"x":'}},
    ]
    raw = sse(chunk({"tool_calls": calls}))
    raw += sse(chunk({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}))
    raw += sse(chunk({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "g", "arguments": "{}"}}]}))
    raw += sse(chunk({}, finish="tool_calls")) + sse("[DONE]")
    events = decode(raw)
    assert [e.step.id for e in events if isinstance(e, StepStarted)] == ["a", "b"]  # type: ignore[attr-defined]
    assert [d.arguments for d in deltas(events)] == ['{"x":', "1}", "{}"]


def wire(step: Step) -> dict[str, Any]:
    """A step as a client reads it."""
    value: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(step))
    return value


@pytest.mark.parametrize("arguments", ["", "{}", None], ids=["empty", "empty-object", "absent"])
def test_decode_call_without_arguments(arguments: str | None) -> None:
    """Servers send `""`, `"{}"` or nothing; the call has `arguments: {}` and one `{}` fragment either way."""
    function: dict[str, Any] = (
        {"name": "now"} if arguments is None else {"name": "now", "arguments": arguments}
    )
    first = {"index": 0, "id": "a", "type": "function", "function": function}
    second = {"index": 1, "id": "b", "type": "function", "function": {"name": "f", "arguments": '{"x":1}'}}
    raw = sse(chunk({"role": "assistant", "tool_calls": [first]})) + sse(chunk({"tool_calls": [second]}))
    raw += sse(chunk({}, finish="tool_calls")) + sse("[DONE]")
    events = decode(raw)
    started = [e.step for e in events if isinstance(e, StepStarted)]
    assert wire(started[0]) == {"type": "function_call", "id": "a", "name": "now", "arguments": {}}
    # the empty call's fragment comes before the next call starts
    kinds = [type(e).__name__ for e in events if not isinstance(e, UsageReported)]
    assert kinds == [
        "StepStarted",
        "StepDelta",
        "StepEnded",
        "StepStarted",
        "StepDelta",
        "StepEnded",
        "Finished",
    ]
    assert [d.arguments for d in deltas(events)] == ["{}", '{"x":1}']


@pytest.mark.parametrize(("reason", "status"), [("length", "incomplete"), ("content_filter", "failed")])
def test_decode_finish_reasons(reason: str, status: str) -> None:
    raw = sse(chunk({"content": "x"})) + sse(chunk({}, finish=reason)) + sse("[DONE]")
    assert decode(raw)[-1].status == status  # type: ignore[union-attr]


def test_decode_errors() -> None:
    with pytest.raises(UpstreamError) as caught:
        decode(b"".join(openai_midstream_error_script("boom").chunks or []))
    assert caught.value.message == "boom" and caught.value.retryable
    with pytest.raises(UpstreamError) as caught:
        decode(sse(chunk({"content": "cut"})))  # no finish_reason and no [DONE]
    assert caught.value.status == 0


def test_decode_tolerates_what_servers_vary_in() -> None:
    """Extra fields, a list as content (Mistral), arguments sent whole, a call without an index."""
    call = {"id": "c1", "function": {"name": "f", "arguments": {"x": 1}}}
    raw = sse({**chunk({"content": [{"type": "thinking", "thinking": "..."}]}), "x_groq": {"id": "q"}})
    raw += sse(chunk({"content": "ok", "tool_calls": [call]}, finish="tool_calls")) + sse("[DONE]")
    events = decode(raw)
    assert deltas(events) == [TextDelta(text="ok"), ArgumentsDelta(arguments='{"x":1}')]
    assert events[-1] == Finished(status="requires_action")


def test_decode_a_field_of_the_wrong_type_is_malformed() -> None:
    with pytest.raises(UpstreamError) as caught:
        decode(sse(chunk({"content": 5})))
    assert caught.value.status == 0 and "$.choices[0].delta.content" in caught.value.message


# ---------------------------------------------------------------------------------------------------------
# Over real HTTP


def backend_for(server: FakeServer, base_path: str = "", **route: Any) -> OpenAIBackend:
    base = server.base_url + base_path
    return OpenAIBackend(ModelRoute(match="*", backend="openai", base_url=base, api_key_env=KEY_ENV, **route))


@pytest.mark.parametrize("base_path", ["", "/v1", "/v1/"])
async def test_stream_over_http(fake: FakeServer, monkeypatch: pytest.MonkeyPatch, base_path: str) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    fake.add(openai_tool_call_script(chunk_delay=0.01))
    backend = backend_for(fake, base_path)
    try:
        events = await drain(
            backend.stream(request([user("weather?")], tools=[{"type": "function", "name": "f"}]))
        )
    finally:
        await backend.aclose()
    assert events[-1] == Finished(status="requires_action")
    sent = fake.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.json()["model"] == "local-model" and sent.json()["stream"] is True


async def test_no_key_no_authorization_header(fake: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    fake.add(openai_text_script("hi"))
    backend = backend_for(fake)
    try:
        await drain(backend.stream(request([user("x")])))
    finally:
        await backend.aclose()
    assert "authorization" not in fake.requests[0].headers


async def test_429_with_retry_after_ms(fake: FakeServer) -> None:
    fake.add(openai_error(429, "Rate limit reached", "rate_limit_error", {"retry-after-ms": "1500"}))
    backend = backend_for(fake)
    try:
        with pytest.raises(UpstreamError) as caught:
            await drain(backend.stream(request([user("x")])))
    finally:
        await backend.aclose()
    assert (caught.value.status, caught.value.retry_after) == (429, 1.5)
    assert caught.value.message == "Rate limit reached"


async def test_429_through_litellm_keeps_the_providers_retry_after(fake: FakeServer) -> None:
    """LiteLLM's proxy passes the provider's headers on as `llm_provider-*`."""
    headers = {"llm_provider-retry-after": "12", "llm_provider-x-ratelimit-remaining-requests": "0"}
    fake.add(openai_error(429, "Rate limit reached", "rate_limit_error", headers))
    backend = backend_for(fake)
    try:
        with pytest.raises(UpstreamError) as caught:
            await drain(backend.stream(request([user("x")])))
    finally:
        await backend.aclose()
    assert (caught.value.status, caught.value.retry_after) == (429, 12.0)


async def test_500_plain_text_and_midstream_error(fake: FakeServer) -> None:
    fake.add(
        openai_error(500, "upstream exploded", "server_error"), openai_midstream_error_script("overloaded")
    )
    backend = backend_for(fake)
    try:
        with pytest.raises(UpstreamError) as caught:
            await drain(backend.stream(request([user("x")])))
        assert caught.value.status == 500 and caught.value.retryable
        seen: list[UpstreamEvent] = []
        with pytest.raises(UpstreamError) as caught:
            async for event in backend.stream(request([user("x")])):
                seen.append(event)
        assert caught.value.message == "overloaded"
        assert any(isinstance(d, TextDelta) for d in deltas(seen))  # the partial output came first
    finally:
        await backend.aclose()


async def test_cancel_closes_the_connection(fake: FakeServer) -> None:
    fake.add(script([chunk({"content": f"w{i} "}) for i in range(30)], chunk_delay=0.1))
    backend = backend_for(fake)
    first = asyncio.Event()

    async def consume() -> None:
        async for _ in backend.stream(request([user("hi")])):
            first.set()

    task = asyncio.create_task(consume())
    try:
        await asyncio.wait_for(first.wait(), 5)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await asyncio.wait_for(fake.disconnected.wait(), 5)
    finally:
        await backend.aclose()
    assert fake.completed == 0
