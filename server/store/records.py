"""The blobs of an interaction's hash, encoded as msgpack (protocol.records has their types), and a record
read back from its fields."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from ..errors import InvalidArgument
from ..protocol.codec import msgpack_decoder, msgpack_encoder
from ..protocol.records import Output, Record, StoredConfig
from ..protocol.steps import Step
from .commands import text
from .keys import Field

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


#: the fields a Record is read from, in the order `record_of` takes their values
RECORD_FIELDS: Final = (
    Field.STATUS,
    Field.CREATED,
    Field.UPDATED,
    Field.PREV,
    Field.BACKGROUND,
    Field.LOG,
    Field.SEQ,
    Field.CONFIG,
    Field.INPUT,
    Field.OUTPUT,
)


def record_of(interaction_id: str, values: Sequence[Any]) -> Record:
    """The record of RECORD_FIELDS' values (status and config present: the caller checked)."""
    status, created, updated, prev, bg, log, seq, cfg, inp, out = values
    return Record(
        id=interaction_id,
        status=text(status),
        created=text(created),
        updated=text(updated),
        previous_interaction_id=text(prev) if prev else None,
        background=bg == b"1",
        logged=log == b"1",
        seq=int(seq or 0),
        config=decode_config(cfg),
        input_steps=decode_steps(inp),
        output=decode_output(out),
    )
