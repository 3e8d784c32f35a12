"""A generateContent body read at once by its strict twin (protocol/strict.py) is what the whole way reads:
the same request, the same warnings, the same errors naming the same field; and a body the twin refuses
goes the whole way. Pure: no server."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from server.dialects.generate import decode, wire
from server.errors import InvalidArgument
from server.protocol import strict
from server.protocol.codec import json_encoder

_PART = {"text": "hi", "thoughtSignature": "s"}
#: bodies the twin reads (no unknown field, camelCase names; free JSON may hold any key) and bodies it
#: refuses: an unknown field at each depth, snake_case names, a wrong type, a missing field, not an object
BODIES: list[Any] = [
    {"contents": [{"role": "user", "parts": [_PART]}]},
    {
        "contents": [
            {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"any_key": 1}}}]}
        ],
        "systemInstruction": {"parts": [{"text": "be brief"}]},
        "generationConfig": {"temperature": 0.5, "thinkingConfig": {"thinkingBudget": 100}},
        "tools": [{"functionDeclarations": [{"name": "f", "parametersJsonSchema": {"type": "object"}}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
    },
    {"contents": [{"parts": [_PART]}], "frobnicate": True},
    {"contents": [{"parts": [{**_PART, "odd\u0001": 1}]}]},
    {"contents": [{"parts": [_PART]}], "generationConfig": {"thinkingConfig": {"budget": 1}}},
    {"contents": [{"parts": [_PART]}], "system_instruction": {"parts": [{"text": "x"}]}},
    {"contents": [{"parts": [{"inline_data": {"mime_type": "image/png", "data": "AA=="}}]}], "x": 1},
    {"contents": [{"parts": [{"text": 3}]}]},
    {"contents": "nope"},
    {"systemInstruction": {"parts": []}},
    [],
]


def _outcome(read: Any, body: bytes, tp: type[Any], *, strict_fields: bool) -> tuple[str, Any]:
    try:
        parsed, warnings = read(body, tp, strict=strict_fields)
    except InvalidArgument as refused:
        return "refused", (str(refused), refused.field)
    assert isinstance(parsed, tp)  # a twin's instance is one of the declared type
    return "read", (json.loads(json_encoder.encode(parsed)), warnings)


@pytest.mark.parametrize("body", BODIES, ids=range(len(BODIES)))
@pytest.mark.parametrize("strict_fields", [False, True])
def test_read_answers_what_the_whole_way_does(body: Any, strict_fields: bool) -> None:
    raw = json.dumps(body).encode()
    for tp in (wire.GenerateContentRequest, wire.CountTokensRequest):
        sent = raw if tp is wire.GenerateContentRequest else json.dumps({"contents": body}).encode()
        fast = _outcome(decode.read, sent, tp, strict_fields=strict_fields)
        whole = _outcome(decode.read_whole, sent, tp, strict_fields=strict_fields)
        assert fast == whole


def test_the_twin_refuses_what_the_whole_way_would_warn_of() -> None:
    twin = strict.decoder(wire.GenerateContentRequest)
    read = twin.decode(json.dumps(BODIES[1]).encode())
    assert isinstance(read, wire.GenerateContentRequest)
    assert isinstance(read.contents[0].parts[0], wire.Part)
    for body in BODIES[2:7]:
        with pytest.raises(msgspec.ValidationError):
            twin.decode(json.dumps(body).encode())
    # the warnings of one, as the whole way gives them
    _, warnings = decode.read(json.dumps(BODIES[3]).encode(), wire.GenerateContentRequest, strict=False)
    assert warnings == ["Unknown field ignored: contents[0].parts[0].odd\u0001"]


class Inner(msgspec.Struct, kw_only=True, tag=True):
    a: int
    b: list[int] = []


class Outer(msgspec.Struct, kw_only=True, rename="camel"):
    inner_one: Inner | None = None
    many: dict[str, Inner] = {}


def test_a_twin_keeps_defaults_required_fields_and_tags() -> None:
    twin = strict.decoder(Outer)
    read = twin.decode(b'{"innerOne": {"type": "Inner", "a": 1}, "many": {"k": {"type": "Inner", "a": 2}}}')
    assert isinstance(read.inner_one, Inner) and read.inner_one.b == []
    assert isinstance(read.many["k"], Inner) and read.many["k"].a == 2
    with pytest.raises(msgspec.ValidationError, match="missing required field `a`"):
        twin.decode(b'{"innerOne": {"type": "Inner"}}')
    with pytest.raises(msgspec.ValidationError, match="unknown field `inner_one`"):
        twin.decode(b'{"inner_one": {"type": "Inner", "a": 1}}')
