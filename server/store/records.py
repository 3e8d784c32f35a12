"""The blobs of an interaction's hash, encoded as msgpack (protocol.records has their types)."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidArgument
from ..protocol.codec import msgpack_decoder, msgpack_encoder
from ..protocol.records import Output, StoredConfig
from ..protocol.steps import Step

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
