"""Anthropic: request bodies, the event decoder on raw bytes, and the backend over real HTTP."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import msgspec
import pytest

from server.errors import InvalidArgument
from server.protocol.content import AudioContent, DocumentContent, ImageContent, TextContent
from server.protocol.deltas import ArgumentsDelta, TextDelta, ThoughtSignatureDelta, ThoughtSummaryDelta
from server.protocol.steps import (
    FunctionCallStep,
    FunctionResultStep,
    ModelOutputStep,
    Step,
    ThoughtStep,
    UserInputStep,
)
from server.settings import ModelRoute
from server.upstream import anthropic, native
from server.upstream.anthropic import AnthropicBackend, AnthropicDecoder
from server.upstream.base import (
    Finished,
    StepStarted,
    UpstreamError,
    UpstreamEvent,
    UpstreamRequest,
    UsageReported,
)
from server.upstream.gemini import GeminiDecoder
from tests.fakes.anthropic import (
    anthropic_error,
    anthropic_error_event_script,
    anthropic_text_script,
    anthropic_thinking_script,
    anthropic_tool_use_script,
    block_delta,
    block_start,
    block_stop,
    event,
    message_end,
    message_start,
    text_block,
)
from tests.fakes.gemini import gemini_function_call_script
from tests.fakes.http import FakeServer, drain, sse

from . import helpers
from .helpers import deltas, user

KEY_ENV = "IX_TEST_ANTHROPIC_KEY"


def request(history: list[Step], model: str = "claude-test", **config: Any) -> UpstreamRequest:
    return helpers.request(history, model, **config)


def build_body(request: UpstreamRequest) -> dict[str, Any]:
    return helpers.sent(anthropic.build_body(request))


def decode(raw: bytes) -> list[UpstreamEvent]:
    decoder = AnthropicDecoder()
    return decoder.feed_bytes(raw) + decoder.close()


def raw_of(events: list[dict[str, Any]]) -> bytes:
    return b"".join(event(e) for e in events)


# ---------------------------------------------------------------------------------------------------------
# Request body


def test_body_defaults_system_media_and_alternation() -> None:
    history: list[Step] = [
        UserInputStep(
            content=[
                TextContent(text="read these"),
                ImageContent(data="aW1n", mime_type="image/jpeg"),
                ImageContent(uri="https://x/y.png"),
                DocumentContent(data="cGRm", mime_type="application/pdf"),
                DocumentContent(data="aGVsbG8=", mime_type="text/plain"),
            ]
        ),
        user("second input in a row"),
        ModelOutputStep(content=[TextContent(text="Done.")]),
    ]
    body = build_body(request(history, system_instruction="Be kind.", generation_config={"temperature": 0.3}))
    assert body["max_tokens"] == 4096 and body["stream"] is True and body["system"] == "Be kind."
    assert body["temperature"] == 0.3
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"]
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "read these"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "aW1n"}},
        {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "cGRm"}},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "hello"}},
        {"type": "text", "text": "second input in a row"},
    ]


def test_thinking_budget_and_sampling() -> None:
    body = build_body(request([user("x")], generation_config={"thinking_level": "high", "temperature": 0.1}))
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 16384}
    assert body["max_tokens"] > 16384 and "temperature" not in body
    capped = build_body(
        request([user("x")], generation_config={"thinking_level": "high", "max_output_tokens": 2000})
    )
    assert capped["thinking"]["budget_tokens"] == 1999 and capped["max_tokens"] == 2000


def test_replay_keeps_only_anthropic_thinking_and_pairs_tool_ids() -> None:
    own = native.wrap("anthropic", "sig-1")
    history: list[Step] = [
        user("weather?"),
        ThoughtStep(signature=native.wrap("gemini", "g"), summary=[TextContent(text="gemini thinks")]),
        ThoughtStep(signature=own, summary=[TextContent(text="I should call")]),
        ThoughtStep(signature=native.wrap("anthropic", {"redacted": "opaque"})),
        ThoughtStep(summary=[TextContent(text="unsigned")]),
        FunctionCallStep(id="call_1", name="weather", arguments={"city": "Paris"}),
        FunctionResultStep(call_id="call_1", result=[TextContent(text="20C")], is_error=False),
    ]
    body = build_body(request(history, generation_config={"thinking_level": "low"}))
    assert body["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "I should call", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Paris"}},
        ],
    }
    assert body["messages"][2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "20C"}],
    }
    assert "thinking" in body  # the tool turn starts with a thinking block: thinking can stay on


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
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    stand_in = {
        "type": "tool_result",
        "tool_use_id": "c2",
        "content": "No result was provided for this call.",
    }
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": "one"},
        {**stand_in, "is_error": True},
    ]
    assert messages[4]["content"] == [{"type": "tool_result", "tool_use_id": "c3", "content": "three"}]


def test_gemini_call_replayed_to_anthropic() -> None:
    """A chain hop: Gemini's call (its id is ours) continues on Anthropic; Gemini's signature stays behind."""
    decoder = GeminiDecoder()
    raw = b"".join(gemini_function_call_script("weather", {"city": "Oslo"}).chunks or [])
    events = decoder.feed_bytes(raw) + decoder.close()
    steps = [e.step for e in events if isinstance(e, StepStarted)]
    thought, call = steps
    assert isinstance(thought, ThoughtStep) and isinstance(call, FunctionCallStep)
    signature = next(d.signature for d in deltas(events) if isinstance(d, ThoughtSignatureDelta))
    thought = ThoughtStep(signature=signature)
    call = FunctionCallStep(id=call.id, name=call.name, arguments={"city": "Oslo"})
    result = FunctionResultStep(call_id=call.id, result={"temp": -3})  # no name, as clients often send
    body = build_body(
        request(
            [user("weather in Oslo?"), thought, call, result], generation_config={"thinking_level": "low"}
        )
    )
    assistant, tool_turn = body["messages"][1], body["messages"][2]
    assert assistant["content"] == [
        {"type": "tool_use", "id": call.id, "name": "weather", "input": {"city": "Oslo"}}
    ]
    assert tool_turn["content"][0]["tool_use_id"] == call.id
    # thinking would be rejected for a tool turn made without it
    assert "thinking" not in body


def test_json_output_goes_into_the_system_prompt() -> None:
    body = build_body(request([user("x")], response_format={"type": "object"}))
    assert "JSON" in body["system"] and '{"type":"object"}' in body["system"]


def test_check_rejects_builtin_tools_and_audio() -> None:
    backend = AnthropicBackend(ModelRoute(match="*", backend="anthropic"))
    with pytest.raises(InvalidArgument) as caught:
        backend.check(request([user("x")], tools=[{"type": "google_search"}]))
    assert caught.value.field == "tools[0]"
    assert "google_search" in caught.value.message and "anthropic" in caught.value.message
    with pytest.raises(InvalidArgument, match="audio"):
        backend.check(request([UserInputStep(content=[AudioContent(data="YQ==", mime_type="audio/wav")])]))


# ---------------------------------------------------------------------------------------------------------
# Decoder


def test_decode_text() -> None:
    events = decode(b"".join(anthropic_text_script("Hello big world").chunks or []))
    assert "".join(d.text for d in deltas(events) if isinstance(d, TextDelta)) == "Hello big world"
    assert events[-1] == Finished(status="completed")


def test_decode_thinking_signature_and_redacted() -> None:
    events = decode(b"".join(anthropic_thinking_script("Hmm.", "sig-xyz", "42").chunks or []))
    started = [type(e.step).__name__ for e in events if isinstance(e, StepStarted)]
    assert started == ["ThoughtStep", "ThoughtStep", "ModelOutputStep"]
    summary, signature, redacted = deltas(events)[:3]
    assert summary == ThoughtSummaryDelta(content=TextContent(text="Hmm."))
    assert native.unwrap(signature.signature) == ("anthropic", "sig-xyz")
    assert native.unwrap(redacted.signature) == ("anthropic", {"redacted": "cmVkYWN0ZWQ="})


def test_decode_tool_use_and_cache_usage() -> None:
    events = decode(
        b"".join(anthropic_tool_use_script("weather", ('{"city"', ': "Paris"}'), "toolu_1").chunks or [])
    )
    call = [e.step for e in events if isinstance(e, StepStarted)][1]
    assert call == FunctionCallStep(id="toolu_1", name="weather", arguments={})
    fragments = [d.arguments for d in deltas(events) if isinstance(d, ArgumentsDelta)]
    assert msgspec.json.decode("".join(fragments)) == {"city": "Paris"}
    usage = [e.usage for e in events if isinstance(e, UsageReported)][-1]
    assert (usage.total_input_tokens, usage.total_cached_tokens, usage.total_output_tokens) == (170, 100, 30)
    assert usage.total_tokens == 200
    assert events[-1] == Finished(status="requires_action")


@pytest.mark.parametrize("empty_fragment", [True, False], ids=["empty-fragment", "no-fragment"])
def test_decode_tool_use_without_input(empty_fragment: bool) -> None:
    """A tool called with no input: `input: {}` and an empty (or no) `input_json_delta`."""
    block = {"type": "tool_use", "id": "toolu_now", "name": "now", "input": {}}
    fragments = [block_delta(0, {"type": "input_json_delta", "partial_json": ""})] if empty_fragment else []
    events = decode(
        raw_of([message_start(), block_start(0, block), *fragments, block_stop(0), *message_end("tool_use")])
    )
    call = next(e.step for e in events if isinstance(e, StepStarted))
    assert msgspec.json.decode(msgspec.json.encode(call)) == {
        "type": "function_call",
        "id": "toolu_now",
        "name": "now",
        "arguments": {},
    }
    assert [d.arguments for d in deltas(events)] == ["{}"]
    assert events[-1] == Finished(status="requires_action")


@pytest.mark.parametrize(("reason", "status"), [("max_tokens", "incomplete"), ("refusal", "failed")])
def test_decode_stop_reasons(reason: str, status: str) -> None:
    finished = decode(raw_of([message_start(), *text_block(0, "x"), *message_end(reason)]))[-1]
    assert isinstance(finished, Finished) and finished.status == status


def test_decode_error_event_after_200() -> None:
    with pytest.raises(UpstreamError) as caught:
        decode(b"".join(anthropic_error_event_script("overloaded_error", "Overloaded").chunks or []))
    error = caught.value
    assert error.status == 529 and error.retryable and "overloaded_error" in error.message
    with pytest.raises(UpstreamError) as caught:
        decode(raw_of([message_start(), *text_block(0, "cut")]))  # no message_delta: truncated
    assert caught.value.status == 0


def test_decode_skips_types_it_does_not_know() -> None:
    """A server tool's blocks (and their input), a citation and an event added later are not errors."""
    server_tool = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    events = decode(
        raw_of(
            [
                message_start(),
                {"type": "future_event", "detail": {"x": 1}},
                block_start(0, server_tool),
                block_delta(0, {"type": "input_json_delta", "partial_json": '{"query": "x"}'}),
                block_stop(0),
                block_start(1, {"type": "text", "text": "", "citations": None}),
                block_delta(1, {"type": "citations_delta", "citation": {"cited_text": "y"}}),
                block_delta(1, {"type": "text_delta", "text": "Found it."}),
                block_stop(1),
                *message_end(),
            ]
        )
    )
    assert [type(e.step).__name__ for e in events if isinstance(e, StepStarted)] == ["ModelOutputStep"]
    assert deltas(events) == [TextDelta(text="Found it.")]
    assert events[-1] == Finished(status="completed")


def test_decode_data_without_type_by_its_event_name() -> None:
    raw = b"".join(
        sse({k: v for k, v in data.items() if k != "type"}, event=data["type"])
        for data in [message_start(), *text_block(0, "a b"), *message_end()]
    )
    events = decode(raw)
    assert "".join(d.text for d in deltas(events) if isinstance(d, TextDelta)) == "a b"
    assert events[-1] == Finished(status="completed")


def test_decode_known_event_of_the_wrong_shape_is_malformed() -> None:
    with pytest.raises(UpstreamError) as caught:
        decode(
            raw_of(
                [
                    message_start(),
                    block_start(0, {"type": "text", "text": ""}),
                    block_delta(0, {"type": "text_delta", "text": 5}),
                ]
            )
        )
    assert caught.value.status == 0 and "malformed stream event" in caught.value.message
    assert "$.delta.text" in caught.value.message


# ---------------------------------------------------------------------------------------------------------
# Over real HTTP


def backend_for(server: FakeServer, **route: Any) -> AnthropicBackend:
    return AnthropicBackend(
        ModelRoute(match="*", backend="anthropic", base_url=server.base_url, api_key_env=KEY_ENV, **route)
    )


async def test_stream_over_http(fake: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "ak-test")
    fake.add(anthropic_thinking_script(chunk_delay=0.01))
    backend = backend_for(fake)
    try:
        events = await drain(
            backend.stream(request([user("hi")], generation_config={"max_output_tokens": 50}))
        )
    finally:
        await backend.aclose()
    assert events[-1] == Finished(status="completed")
    sent = fake.requests[0]
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == "ak-test" and sent.headers["anthropic-version"] == "2023-06-01"
    body = sent.json()
    assert body["max_tokens"] == 50 and body["stream"] is True and body["model"] == "claude-test"


async def test_529_before_stream_and_error_event_after_200(fake: FakeServer) -> None:
    fake.add(
        anthropic_error(529, "overloaded_error", "Overloaded", {"retry-after": "3"}),
        anthropic_error_event_script(),
    )
    backend = backend_for(fake)
    try:
        with pytest.raises(UpstreamError) as caught:
            await drain(backend.stream(request([user("x")])))
        assert (caught.value.status, caught.value.retry_after, caught.value.message) == (
            529,
            3.0,
            "Overloaded",
        )
        with pytest.raises(UpstreamError) as caught:
            await drain(backend.stream(request([user("x")])))
        assert caught.value.status == 529 and caught.value.backend == "anthropic"
    finally:
        await backend.aclose()


async def test_429_through_litellm_keeps_the_providers_retry_after(fake: FakeServer) -> None:
    """A LiteLLM proxy in front of Anthropic: the wait in milliseconds, under its `llm_provider-` prefix."""
    fake.add(anthropic_error(429, "rate_limit_error", "Slow down", {"llm_provider-retry-after-ms": "2500"}))
    backend = backend_for(fake)
    try:
        with pytest.raises(UpstreamError) as caught:
            await drain(backend.stream(request([user("x")])))
    finally:
        await backend.aclose()
    assert (caught.value.status, caught.value.retry_after) == (429, 2.5)


async def test_cancel_closes_the_connection(fake: FakeServer) -> None:
    fake.add(anthropic_text_script(" ".join(f"w{i}" for i in range(40)), chunk_delay=0.1))
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
