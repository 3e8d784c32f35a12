"""The shared streaming-JSON decoder: bytes to wire chunks to events, `[DONE]`, and malformed input."""

from __future__ import annotations

import msgspec
import pytest

from server.upstream.base import Finished, StepDelta, StepEnded, StepStarted, UpstreamError
from server.upstream.stream import Events, JsonStreamDecoder
from tests.fakes.http import sse


class Chunk(msgspec.Struct):
    text: str | None = None


class TextDecoder(JsonStreamDecoder[Chunk]):
    """The smallest provider: each chunk's text is model output; the stream ends with `[DONE]`."""

    def __init__(self) -> None:
        super().__init__("fake", msgspec.json.Decoder(Chunk))

    def on_chunk(self, chunk: Chunk) -> Events:
        return self.steps.text(chunk.text or "")

    def finished(self) -> Finished:
        if not self.done:
            raise UpstreamError(self.backend, 0, "cut short")
        return Finished(status="completed")


def decode(raw: bytes) -> Events:
    decoder = TextDecoder()
    # a byte at a time: chunk boundaries never matter
    events = [event for i in range(len(raw)) for event in decoder.feed_bytes(raw[i : i + 1])]
    return events + decoder.close()


def test_chunks_become_events_and_close_ends_the_step() -> None:
    events = decode(sse({"text": "Hel", "unknown": [1, {"x": 2}]}) + sse({"text": "lo"}) + sse("[DONE]"))
    assert [type(e) for e in events] == [StepStarted, StepDelta, StepDelta, StepEnded, Finished]
    assert events[-1] == Finished(status="completed")


def test_a_value_that_is_not_an_object_is_skipped() -> None:
    events = decode(sse([1, 2]) + sse('"text"') + sse({"text": "a"}) + sse("[DONE]"))
    assert [type(e) for e in events] == [StepStarted, StepDelta, StepEnded, Finished]


def test_invalid_json_is_malformed() -> None:
    with pytest.raises(UpstreamError) as caught:
        decode(b"data: {not json\n\n")
    assert caught.value.status == 0 and caught.value.retryable
    assert caught.value.message == "malformed stream chunk: '{not json'"


def test_a_field_of_the_wrong_type_is_malformed_and_named() -> None:
    with pytest.raises(UpstreamError) as caught:
        decode(sse({"text": 5}))
    assert "malformed stream chunk" in caught.value.message and "`$.text`" in caught.value.message


def test_the_end_is_the_providers_to_judge() -> None:
    with pytest.raises(UpstreamError, match="cut short"):
        decode(sse({"text": "a"}))


def test_output_and_an_error_in_one_read_come_out_in_that_order() -> None:
    """A transport may hand over a whole body at once (aiohttp does): the output read before a malformed
    chunk is returned first, and the error raised on the next call."""
    decoder = TextDecoder()
    events = decoder.feed_bytes(sse({"text": "partial"}) + b"data: {not json\n\n")
    assert [type(e) for e in events] == [StepStarted, StepDelta]
    with pytest.raises(UpstreamError, match="malformed"):
        decoder.close()
    # an error with nothing before it is raised at once
    with pytest.raises(UpstreamError, match="malformed"):
        TextDecoder().feed_bytes(b"data: {not json\n\n")
