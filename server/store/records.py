"""What is stored for an interaction, beside the status fields of its hash (msgpack blobs)."""

from __future__ import annotations

from typing import Any

import msgspec

from ..protocol.base import Wire
from ..protocol.codec import InvalidArgument, msgpack_decoder, msgpack_encoder
from ..protocol.interaction import ErrorInfo, InteractionConfig, Usage
from ..protocol.steps import Step


class StoredConfig(Wire):
    """The `cfg` blob: written once at create."""

    config: InteractionConfig
    #: `input` as the client sent it, for `get(include_input=true)`
    input: Any = None
    warnings: list[str] | None = None


class Output(Wire):
    """The `out` blob: written when the run ends."""

    steps: list[Step] = []
    usage: Usage | None = None
    errors: list[ErrorInfo] | None = None


class Record(msgspec.Struct, kw_only=True):
    """One interaction as read back from Redis."""

    id: str
    status: str
    created: str
    updated: str
    previous_interaction_id: str | None
    background: bool
    logged: bool
    seq: int
    config: StoredConfig
    input_steps: list[Step]
    output: Output | None
    #: the run's end (output, terminal events) is written; false while a cancelled run saves its output
    settled: bool = False


_config_decoder = msgpack_decoder(StoredConfig)
_steps_decoder = msgpack_decoder(list[Step])
_output_decoder = msgpack_decoder(Output)


def encode(value: Any) -> bytes:
    try:
        return msgpack_encoder.encode(value)
    except OverflowError:
        # JSON allows integers of any size; the stored form (msgpack) takes 64 bits
        raise InvalidArgument("A number in the request is outside the 64-bit integer range") from None


def decode_config(blob: bytes) -> StoredConfig:
    return _config_decoder.decode(blob)


def decode_steps(blob: bytes | None) -> list[Step]:
    return _steps_decoder.decode(blob) if blob else []


def decode_output(blob: bytes | None) -> Output | None:
    return _output_decoder.decode(blob) if blob else None
