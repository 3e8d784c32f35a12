"""The SSE and line decoders, and the provider-native signature envelope."""

from __future__ import annotations

import base64

import pytest

from server.upstream import native
from server.upstream.sse import LineDecoder, SSEDecoder, SSEMessage


def decode_all(raw: bytes, step: int | None = None) -> list[SSEMessage]:
    decoder = SSEDecoder()
    out: list[SSEMessage] = []
    size = step or len(raw) or 1
    for i in range(0, len(raw), size):
        out += decoder.feed(raw[i : i + size])
    return out + decoder.close()


STREAM = b'event: a\ndata: {"x":1}\n\n: keep-alive comment\n\ndata: line1\ndata: line2\nid: 7\n\n'


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
@pytest.mark.parametrize("step", [None, 1, 3])
def test_sse_line_endings_and_split_reads(newline: bytes, step: int | None) -> None:
    raw = STREAM.replace(b"\n", newline)
    assert decode_all(raw, step) == [
        SSEMessage("a", '{"x":1}', None),
        SSEMessage("message", "line1\nline2", "7"),
    ]


def test_sse_field_details() -> None:
    raw = b"data:no-space\n\ndata:  two spaces\n\nevent: only-event\n\nretry: 10\ndata: x\n\n"
    assert [m.data for m in decode_all(raw)] == ["no-space", " two spaces", "x"]


def test_sse_last_event_without_blank_line_is_delivered_on_close() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"end":true}') == []
    assert decoder.close() == [SSEMessage("message", '{"end":true}')]


def test_sse_utf8_split_across_reads() -> None:
    raw = "data: héllo wörld\n\n".encode()
    assert decode_all(raw, 1) == [SSEMessage("message", "héllo wörld")]


def test_sse_trailing_cr_waits_for_possible_lf() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r\n\r") == []
    assert decoder.feed(b"\ndata: b\r\n\r\n") == [SSEMessage("message", "a"), SSEMessage("message", "b")]


def test_line_decoder() -> None:
    decoder = LineDecoder()
    assert decoder.feed(b'{"a":1}\n{"b"') == ['{"a":1}']
    assert decoder.feed(b":2}\r\n\n") == ['{"b":2}']
    assert decoder.feed(b'{"c":3}') == []
    assert decoder.close() == ['{"c":3}']


def test_native_round_trip_keeps_origin() -> None:
    signature = native.wrap("gemini", "c2ln")
    base64.b64decode(signature, validate=True)  # a plain base64 string for clients
    assert native.unwrap(signature) == ("gemini", "c2ln")
    assert native.native_for(signature, "gemini") == "c2ln"
    assert native.native_for(signature, "anthropic") is None
    redacted = native.wrap("anthropic", {"redacted": "abc"})
    assert native.unwrap(redacted) == native.Native("anthropic", {"redacted": "abc"})


@pytest.mark.parametrize(
    "foreign", [None, "", "not base64!", base64.b64encode(b"real gemini bytes").decode(), "AAAA"]
)
def test_native_rejects_foreign_signatures(foreign: str | None) -> None:
    assert native.unwrap(foreign) is None


def test_safe_call_ids_are_stable() -> None:
    assert native.safe_call_id("call_abc-1") == "call_abc-1"
    assert native.safe_call_id("fc/1.2") == native.safe_call_id("fc/1.2") == "fc_1_2"
    assert native.new_call_id() != native.new_call_id()
