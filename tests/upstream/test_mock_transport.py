"""A backend against `httpx.MockTransport`: the transport is the backends' one I/O seam, so a provider can
be tested with no server at all (the TCP fakes in tests/fakes/ test the real wire)."""

from __future__ import annotations

import httpx
import msgspec

from server.protocol.deltas import TextDelta
from server.settings import ModelRoute
from server.upstream.base import Finished, UpstreamError, UpstreamEvent
from server.upstream.openai import OpenAIBackend

from .helpers import deltas, request, user


def sse_body(*chunks: object) -> bytes:
    return b"".join(b"data: " + msgspec.json.encode(c) + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def chunk(delta: dict[str, object], finish: str | None = None) -> dict[str, object]:
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


async def stream(handler: httpx.MockTransport) -> list[UpstreamEvent]:
    route = ModelRoute(match="*", backend="openai", base_url="http://upstream.test/v1")
    backend = OpenAIBackend(route, transport=handler)
    try:
        return [event async for event in backend.stream(request([user("hi")], "local-model"))]
    finally:
        await backend.aclose()


async def test_a_streamed_answer_through_a_mock_transport() -> None:
    sent: list[httpx.Request] = []

    def answer(req: httpx.Request) -> httpx.Response:
        sent.append(req)
        body = sse_body(chunk({"content": "Hello"}), chunk({"content": " there"}), chunk({}, "stop"))
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    events = await stream(httpx.MockTransport(answer))
    assert [d.text for d in deltas(events) if isinstance(d, TextDelta)] == ["Hello", " there"]
    assert events[-1] == Finished(status="completed")
    assert str(sent[0].url) == "http://upstream.test/v1/chat/completions"
    assert msgspec.json.decode(sent[0].content)["stream"] is True
    # the route's timeouts travel with the request, as httpx's own client would put them
    assert (
        sent[0].extensions["timeout"]["read"] == ModelRoute(match="*", backend="openai").read_timeout_seconds
    )


async def test_a_rate_limit_through_a_mock_transport() -> None:
    def limited(req: httpx.Request) -> httpx.Response:
        return httpx.Response(429, json={"error": {"message": "slow down"}}, headers={"retry-after": "3"})

    try:
        await stream(httpx.MockTransport(limited))
    except UpstreamError as error:
        assert (error.status, error.retry_after, error.message) == (429, 3.0, "slow down")
    else:
        raise AssertionError("a 429 must raise")
