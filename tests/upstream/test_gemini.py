"""Gemini: request bodies, the stream decoder on raw bytes, and the backend against a fake over real HTTP."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import msgspec
import pytest

from server.errors import InvalidArgument
from server.protocol.content import ImageContent, TextContent, VideoContent
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
from server.upstream import gemini, native
from server.upstream.base import (
    Finished,
    StepEnded,
    StepStarted,
    UpstreamError,
    UpstreamEvent,
    UpstreamRequest,
    UsageReported,
)
from server.upstream.gemini import GeminiBackend, GeminiDecoder
from tests.fakes.gemini import (
    chunk,
    gemini_error,
    gemini_function_call_script,
    gemini_text_script,
    gemini_thought_script,
    script,
    usage,
)
from tests.fakes.http import FakeServer, drain, sse

from . import helpers
from .helpers import deltas, user

KEY_ENV = "IX_TEST_GEMINI_KEY"


def request(history: list[Step], model: str = "gemini-3-flash", **config: Any) -> UpstreamRequest:
    return helpers.request(history, model, **config)


def build_body(request: UpstreamRequest) -> dict[str, Any]:
    return helpers.sent(gemini.build_body(request))


def decode(raw: bytes) -> list[UpstreamEvent]:
    decoder = GeminiDecoder()
    return decoder.feed_bytes(raw) + decoder.close()


# ---------------------------------------------------------------------------------------------------------
# Request body


def test_body_config_tools_and_format() -> None:
    body = build_body(
        request(
            [user("hi")],
            system_instruction="Be terse.",
            generation_config={
                "temperature": 0.2,
                "top_p": 0.9,
                "max_output_tokens": 64,
                "stop_sequences": ["END"],
                "seed": 7,
                "thinking_level": "low",
                "thinking_summaries": "auto",
                "tool_choice": "any",
            },
            response_format={"type": "text", "mime_type": "application/json", "schema": {"type": "object"}},
            tools=[
                {"type": "function", "name": "f", "description": "d", "parameters": {"type": "object"}},
                {"type": "google_search"},
                {"type": "code_execution"},
                {"type": "url_context"},
            ],
        )
    )
    assert body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]
    assert body["systemInstruction"] == {"parts": [{"text": "Be terse."}]}
    assert body["generationConfig"] == {
        "temperature": 0.2,
        "topP": 0.9,
        "seed": 7,
        "stopSequences": ["END"],
        "maxOutputTokens": 64,
        "thinkingConfig": {"thinkingLevel": "LOW", "includeThoughts": True},
        "responseMimeType": "application/json",
        "responseJsonSchema": {"type": "object"},
    }
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {"name": "f", "description": "d", "parametersJsonSchema": {"type": "object"}}
            ]
        },
        {"googleSearch": {}},
        {"codeExecution": {}},
        {"urlContext": {}},
    ]
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}


def test_body_gemini_2_takes_a_thinking_budget_and_bare_schema() -> None:
    body = build_body(
        request(
            [user("x")],
            model="gemini-2.5-flash",
            generation_config={"thinking_level": "high"},
            response_format={"type": "object", "properties": {}},
        )
    )
    assert body["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 16384}
    assert body["generationConfig"]["responseJsonSchema"] == {"type": "object", "properties": {}}


def test_contents_media_merge_and_function_round_trip() -> None:
    gemini_sig = native.wrap("gemini", "R0VNSU5J")
    history: list[Step] = [
        UserInputStep(
            content=[
                TextContent(text="what is this"),
                ImageContent(data="aW1n", mime_type="image/jpeg"),
                VideoContent(uri="gs://b/v.mp4", mime_type="video/mp4", processing={"fps": 2}),
            ]
        ),
        user("and the weather?"),  # two user inputs in a row: one turn
        ThoughtStep(signature=native.wrap("anthropic", "foreign")),  # another backend's: dropped
        ThoughtStep(signature=gemini_sig),  # ours, no summary: rides on the next part
        FunctionCallStep(id="call_1", name="weather", arguments={"city": "Paris"}),
        FunctionCallStep(id="call_2", name="time", arguments={}),
        # results out of order, one without a name: ordered by call and named from it
        FunctionResultStep(call_id="call_2", result="noon"),
        FunctionResultStep(call_id="call_1", name="weather", result={"temp": 20}),
        ModelOutputStep(content=[TextContent(text="Sunny at noon.")]),
    ]
    contents = build_body(request(history))["contents"]
    assert contents == [
        {
            "role": "user",
            "parts": [
                {"text": "what is this"},
                {"inlineData": {"mimeType": "image/jpeg", "data": "aW1n"}},
                {
                    "fileData": {"mimeType": "video/mp4", "fileUri": "gs://b/v.mp4"},
                    "videoMetadata": {"fps": 2},
                },
                {"text": "and the weather?"},
            ],
        },
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"name": "weather", "args": {"city": "Paris"}},
                    "thoughtSignature": "R0VNSU5J",
                },
                {"functionCall": {"name": "time", "args": {}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "weather", "response": {"temp": 20}}},
                {"functionResponse": {"name": "time", "response": {"result": "noon"}}},
            ],
        },
        {"role": "model", "parts": [{"text": "Sunny at noon."}]},
    ]


def call_part(call_id: str) -> dict[str, Any]:
    return {"functionCall": {"name": "weather", "args": {"city": call_id}}}


def response_part(value: Any) -> dict[str, Any]:
    return {"functionResponse": {"name": "weather", "response": value}}


STAND_IN = response_part({"error": "No result was provided for this call."})


def test_calls_left_unanswered_get_a_stand_in_response() -> None:
    """Gemini refuses a turn of N calls followed by fewer responses: each call gets one, in order."""
    paris, london, rome = (FunctionCallStep(id=c, name="weather", arguments={"city": c}) for c in "PLR")
    history: list[Step] = [
        user("weather?"),
        paris,
        london,
        FunctionResultStep(call_id="L", result="rain"),  # only the second call answered
        rome,  # the model's next turn
        FunctionResultStep(call_id="R", result="sun"),
        paris,  # the same call made again and never answered: the client wrote instead
        user("never mind"),
        london,  # still open at the end
    ]
    assert build_body(request(history))["contents"][1:] == [
        {"role": "model", "parts": [call_part("P"), call_part("L")]},
        {"role": "user", "parts": [STAND_IN, response_part({"result": "rain"})]},
        {"role": "model", "parts": [call_part("R")]},
        {"role": "user", "parts": [response_part({"result": "sun"})]},
        {"role": "model", "parts": [call_part("P")]},
        {"role": "user", "parts": [STAND_IN, {"text": "never mind"}]},
        {"role": "model", "parts": [call_part("L")]},
        {"role": "user", "parts": [STAND_IN]},
    ]


def test_result_without_its_call_is_text() -> None:
    history: list[Step] = [user("q"), FunctionResultStep(call_id="gone", name="weather", result="late")]
    assert build_body(request(history))["contents"] == [
        {"role": "user", "parts": [{"text": "q"}, {"text": "Result of function weather: late"}]}
    ]


def test_thought_with_summary_is_replayed_as_thought_part() -> None:
    history: list[Step] = [
        user("q"),
        ThoughtStep(signature=native.wrap("gemini", "U0lH"), summary=[TextContent(text="hmm")]),
        ModelOutputStep(content=[TextContent(text="a")]),
        ThoughtStep(signature=native.wrap("gemini", "VEFJTA==")),  # trailing: an empty signed text part
        ThoughtStep(summary=[TextContent(text="client thought, no signature")]),
    ]
    contents = build_body(request(history))["contents"]
    assert contents[1] == {
        "role": "model",
        "parts": [
            {"text": "hmm", "thought": True, "thoughtSignature": "U0lH"},
            {"text": "a"},
            {"text": "", "thoughtSignature": "VEFJTA=="},
        ],
    }


def test_check_rejects_tools_gemini_cannot_run() -> None:
    backend = GeminiBackend(ModelRoute(match="*", backend="gemini"))
    backend.check(request([user("x")], tools=[{"type": "google_search"}, {"type": "code_execution"}]))
    # MCP servers are the server's to run (runner/tool_run.py): the model is offered their tools as functions
    backend.check(request([user("x")], tools=[{"type": "mcp_server", "name": "m", "url": "u"}]))
    with pytest.raises(InvalidArgument) as caught:
        backend.check(request([user("x")], tools=[{"type": "google_search"}, {"type": "retrieval"}]))
    assert caught.value.field == "tools[1]"
    assert "retrieval" in caught.value.message and "gemini" in caught.value.message


# ---------------------------------------------------------------------------------------------------------
# Stream decoder on raw bytes


def test_decode_text_stream() -> None:
    raw = b"".join(gemini_text_script("Hello world").chunks or [])
    events = decode(raw)
    assert isinstance(events[0], StepStarted) and isinstance(events[0].step, ModelOutputStep)
    assert "".join(d.text for d in deltas(events) if isinstance(d, TextDelta)) == "Hello world"
    assert isinstance(events[-2], StepEnded)
    assert events[-1] == Finished(status="completed")
    usages = [e.usage for e in events if isinstance(e, UsageReported)]
    assert usages[-1].total_input_tokens == 5 and usages[-1].total_output_tokens == 3
    assert usages[-1].input_tokens_by_modality is not None
    assert usages[-1].input_tokens_by_modality[0].modality == "text"


def test_decode_thoughts_and_signature_on_text() -> None:
    events = decode(b"".join(gemini_thought_script("Let me think.", "42", "c2ln").chunks or []))
    kinds = [(type(e).__name__, type(getattr(e, "step", getattr(e, "delta", None))).__name__) for e in events]
    assert kinds[:6] == [
        ("StepStarted", "ThoughtStep"),
        ("StepDelta", "ThoughtSummaryDelta"),
        ("StepEnded", "NoneType"),
        ("StepStarted", "ModelOutputStep"),
        ("StepDelta", "TextDelta"),
        ("StepEnded", "NoneType"),
    ]
    summary = deltas(events)[0]
    assert isinstance(summary, ThoughtSummaryDelta) and summary.content == TextContent(text="Let me think.")
    signature = next(d for d in deltas(events) if isinstance(d, ThoughtSignatureDelta))
    assert native.unwrap(signature.signature) == ("gemini", "c2ln")
    usage_event = [e for e in events if isinstance(e, UsageReported)][-1]
    assert usage_event.usage.total_thought_tokens == 7
    assert events[-1] == Finished(status="completed")


def test_decode_function_call() -> None:
    events = decode(b"".join(gemini_function_call_script("get_weather", {"city": "Paris"}).chunks or []))
    started = [e.step for e in events if isinstance(e, StepStarted)]
    assert isinstance(started[0], ThoughtStep)  # the call's signature, placed before it
    call = started[1]
    assert isinstance(call, FunctionCallStep) and call.name == "get_weather" and call.id.startswith("call_")
    arguments = "".join(d.arguments for d in deltas(events) if isinstance(d, ArgumentsDelta))
    assert msgspec.json.decode(arguments) == {"city": "Paris"}
    assert events[-1] == Finished(status="requires_action")


@pytest.mark.parametrize(
    "call", [{"name": "now"}, {"name": "now", "args": {}}], ids=["no-args", "empty-args"]
)
def test_decode_function_call_without_arguments(call: dict[str, Any]) -> None:
    events = decode(sse(chunk([{"functionCall": call}], finish="STOP", meta=usage())))
    [started] = [e.step for e in events if isinstance(e, StepStarted)]
    assert isinstance(started, FunctionCallStep)
    assert msgspec.json.decode(msgspec.json.encode(started)) == {
        "type": "function_call",
        "id": started.id,
        "name": "now",
        "arguments": {},
    }
    assert [d.arguments for d in deltas(events)] == ["{}"]


@pytest.mark.parametrize(
    ("reason", "status", "text"),
    [
        ("MAX_TOKENS", "incomplete", None),
        ("SAFETY", "failed", "safety filters"),
        ("RECITATION", "failed", "recites"),
        ("MALFORMED_FUNCTION_CALL", "failed", "MALFORMED_FUNCTION_CALL"),
    ],
)
def test_decode_finish_reasons(reason: str, status: str, text: str | None) -> None:
    finished = decode(sse(chunk([{"text": "x"}], finish=reason, meta=usage())))[-1]
    assert isinstance(finished, Finished) and finished.status == status
    if text is None:
        assert finished.error is None
    else:
        assert finished.error is not None and text in finished.error.message


def test_decode_blocked_prompt() -> None:
    raw = sse({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": usage(output=0)})
    finished = decode(raw)[-1]
    assert isinstance(finished, Finished) and finished.status == "failed"
    assert finished.error is not None and "blocked" in finished.error.message


def test_decode_truncated_stream_and_error_chunk() -> None:
    with pytest.raises(UpstreamError) as caught:
        decode(sse(chunk([{"text": "partial"}])))
    assert caught.value.status == 0 and caught.value.retryable
    with pytest.raises(UpstreamError) as caught:
        decode(sse({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}))
    assert caught.value.status == 503 and "overloaded" in caught.value.message


def test_decode_skips_what_it_does_not_model() -> None:
    """Grounding, safety ratings, a part kind added later, and the `[DONE]` some imitations send."""
    body = chunk(
        [{"text": "Paris."}, {"videoMetadata": {"fps": 1}, "partMetadata": {}}], finish="STOP", meta=usage()
    )
    body["candidates"][0] |= {"groundingMetadata": {"webSearchQueries": ["x"]}, "safetyRatings": []}
    events = decode(sse(body) + sse("[DONE]"))
    assert deltas(events) == [TextDelta(text="Paris.")]
    assert events[-1] == Finished(status="completed")


# ---------------------------------------------------------------------------------------------------------
# Over real HTTP


def backend_for(server: FakeServer, **route: Any) -> GeminiBackend:
    settings = {
        "match": "*",
        "backend": "gemini",
        "base_url": server.base_url,
        "api_key_env": KEY_ENV,
        **route,
    }
    return GeminiBackend(ModelRoute(**settings))


async def test_stream_over_http(fake: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "secret-key")
    fake.add(gemini_text_script("Hello over HTTP", chunk_delay=0.01))
    backend = backend_for(fake)
    try:
        events = await drain(backend.stream(request([user("hi")], model="gemini-3-flash")))
    finally:
        await backend.aclose()
    assert "".join(d.text for d in deltas(events) if isinstance(d, TextDelta)) == "Hello over HTTP"
    assert events[-1] == Finished(status="completed")
    sent = fake.requests[0]
    assert sent.path == "/v1beta/models/gemini-3-flash:streamGenerateContent"
    assert sent.query == "alt=sse"
    assert sent.headers["x-goog-api-key"] == "secret-key"
    assert sent.json()["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]


async def test_base_url_with_version_is_not_doubled(fake: FakeServer) -> None:
    fake.add(gemini_text_script("ok"))
    backend = backend_for(fake, base_url=fake.base_url + "/v1beta/")
    try:
        await drain(backend.stream(request([user("hi")])))
    finally:
        await backend.aclose()
    assert fake.requests[0].path == "/v1beta/models/gemini-3-flash:streamGenerateContent"


async def test_429_with_retry_after(fake: FakeServer) -> None:
    fake.add(gemini_error(429, "Resource exhausted", "RESOURCE_EXHAUSTED", {"Retry-After": "7"}))
    backend = backend_for(fake)
    try:
        with pytest.raises(UpstreamError) as caught:
            await drain(backend.stream(request([user("hi")])))
    finally:
        await backend.aclose()
    error = caught.value
    assert (error.status, error.retry_after, error.message) == (429, 7.0, "Resource exhausted")
    assert error.backend == "gemini" and error.retryable


async def test_429_through_a_proxy_keeps_the_providers_retry_after(fake: FakeServer) -> None:
    fake.add(gemini_error(429, "Resource exhausted", "RESOURCE_EXHAUSTED", {"llm_provider-retry-after": "9"}))
    backend = backend_for(fake)
    try:
        with pytest.raises(UpstreamError) as caught:
            await drain(backend.stream(request([user("hi")])))
    finally:
        await backend.aclose()
    assert caught.value.retry_after == 9.0


async def test_429_retry_info_in_body(fake: FakeServer) -> None:
    fake.add(gemini_error(429, "Quota exceeded", "RESOURCE_EXHAUSTED", retry_delay="37s"))
    backend = backend_for(fake)
    try:
        with pytest.raises(UpstreamError) as caught:
            await drain(backend.stream(request([user("hi")])))
    finally:
        await backend.aclose()
    assert caught.value.retry_after == 37.0


async def test_400_keeps_upstream_message(fake: FakeServer) -> None:
    fake.add(gemini_error(400, "Invalid JSON payload received.", "INVALID_ARGUMENT"))
    backend = backend_for(fake)
    try:
        with pytest.raises(UpstreamError) as caught:
            await drain(backend.stream(request([user("hi")])))
    finally:
        await backend.aclose()
    assert caught.value.status == 400 and not caught.value.retryable
    assert caught.value.message == "Invalid JSON payload received."


async def test_abrupt_close_is_a_connection_error(fake: FakeServer) -> None:
    chunks = script([chunk([{"text": "a"}]), chunk([{"text": "b"}]), chunk([{"text": "c"}], finish="STOP")])
    chunks.abort_after = 1
    fake.add(chunks)
    backend = backend_for(fake)
    try:
        with pytest.raises(UpstreamError) as caught:
            await drain(backend.stream(request([user("hi")])))
    finally:
        await backend.aclose()
    assert caught.value.status == 0 and not caught.value.timeout


async def test_read_timeout_and_deadline(fake: FakeServer) -> None:
    fake.add(gemini_text_script("slow", first_chunk_delay=1.0))
    backend = backend_for(fake, read_timeout_seconds=0.2)
    try:
        with pytest.raises(UpstreamError) as caught:
            await drain(backend.stream(request([user("hi")])))
        assert caught.value.timeout and caught.value.status == 0
        fake.add(gemini_text_script("a b c d e f", chunk_delay=0.15))
        backend.route = ModelRoute(match="*", backend="gemini", deadline_seconds=0.2)
        with pytest.raises(UpstreamError) as caught:
            await drain(backend.stream(request([user("hi")])))
        assert caught.value.timeout and "deadline" in caught.value.message
    finally:
        await backend.aclose()


async def test_unreachable_upstream() -> None:
    async with FakeServer() as server:
        base_url = server.base_url
    backend = GeminiBackend(ModelRoute(match="*", backend="gemini", base_url=base_url))
    try:
        with pytest.raises(UpstreamError) as caught:
            await drain(backend.stream(request([user("hi")])))
    finally:
        await backend.aclose()
    assert caught.value.status == 0 and "connection failed" in caught.value.message


async def test_cancel_closes_the_connection(fake: FakeServer) -> None:
    fake.add(gemini_text_script("one two three four five six seven eight", chunk_delay=0.2))
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
    assert fake.disconnects and fake.completed == 0
