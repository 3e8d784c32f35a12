"""Provider-native data that must only ever go back to the provider that made it, and call-id pairing.

A thought signature (Gemini), a thinking signature or redacted thinking block (Anthropic) or encrypted
reasoning (OpenAI) is opaque to us and meaningless, or an error, anywhere else. Clients round-trip
`thought.signature` verbatim, also in `store=false` replays where we never saw the step before, so the origin
travels inside the signature: `wrap` seals the backend name and the native value into one base64 string,
`unwrap` opens it, and a signature that was not made by `wrap` (foreign, truncated, forged) opens to None and
is dropped rather than sent to a provider that would reject the whole request.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import secrets
from collections.abc import Iterable
from typing import Any, NamedTuple

import msgspec

from ..protocol.steps import FunctionCallStep, FunctionResultStep, Step

# Versioned so the envelope can change without misreading old signatures.
_MAGIC = b"ixsig1:"
_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()


class Native(NamedTuple):
    backend: str
    value: Any


def wrap(backend: str, native: Any) -> str:
    """Seal a JSON-able native value (a str, or a small object such as {"redacted": ...}) with its origin."""
    if isinstance(native, bytes):
        native = {"b64": base64.b64encode(native).decode()}
    payload = _MAGIC + _encoder.encode({"b": backend, "v": native})
    return base64.b64encode(payload).decode()


def unwrap(signature: str | None) -> Native | None:
    """The (backend, native value) sealed in `signature`, or None when it is not one of ours."""
    if not signature:
        return None
    try:
        payload = base64.b64decode(signature, validate=True)
    except (binascii.Error, ValueError):
        return None
    if not payload.startswith(_MAGIC):
        return None
    try:
        body = _decoder.decode(payload[len(_MAGIC) :])
    except msgspec.DecodeError:
        return None
    if not isinstance(body, dict) or not isinstance(body.get("b"), str) or "v" not in body:
        return None
    return Native(body["b"], body["v"])


def native_for(signature: str | None, backend: str) -> Any:
    """The native value of `signature` if `backend` made it, else None."""
    opened = unwrap(signature)
    return opened.value if opened is not None and opened.backend == backend else None


def new_call_id() -> str:
    """An id for a function call whose upstream gave none (Gemini). Safe for every provider's id pattern."""
    return "call_" + secrets.token_hex(12)


def safe_call_id(call_id: str) -> str:
    """A call id in the charset Anthropic and OpenAI accept; the same input always gives the same output, so a
    call and its result stay paired."""
    cleaned = "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "_" for c in call_id)
    return cleaned[:64] or "call"


class CallIndex:
    """The function calls of a history, by id, in order: how a result finds its call's name and position."""

    def __init__(self, history: Iterable[Step]) -> None:
        self.calls: dict[str, FunctionCallStep] = {}
        self.order: dict[str, int] = {}
        self.answered: set[str] = set()
        for step in history:
            if isinstance(step, FunctionCallStep):
                self.order.setdefault(step.id, len(self.order))
                self.calls[step.id] = step
            elif isinstance(step, FunctionResultStep):
                self.answered.add(step.call_id)

    def name_of(self, result: FunctionResultStep) -> str:
        if result.name:
            return result.name
        call = self.calls.get(result.call_id)
        return call.name if call is not None else "unknown_function"

    def has_call(self, call_id: str) -> bool:
        return call_id in self.calls

    def sort_results(self, results: list[FunctionResultStep]) -> list[FunctionResultStep]:
        """Results in the order of their calls: Gemini pairs responses with calls by position."""
        tail = itertools.count(len(self.order))
        keyed = [(self.order.get(r.call_id, next(tail)), r) for r in results]
        return [r for _, r in sorted(keyed, key=lambda pair: pair[0])]
