"""The blobs of an interaction (its config, input steps and output), encoded as msgpack (protocol.records has
their types), and a record read back from its hash fields and blobs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

from ..errors import InvalidArgument
from ..protocol.codec import msgpack_decoder, msgpack_encoder
from ..protocol.content import TextContent
from ..protocol.records import Output, Record, StoredConfig
from ..protocol.steps import Step, UserInputStep
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


def encode_config(config: StoredConfig, input_steps: Sequence[Step]) -> bytes:
    """The `cfg` blob. `input` as the client sent it is left out when it is a string, the text of the one
    input step: read back, it is that step's text again (`record_of`), so a prompt is stored once."""
    if isinstance(config.input, str) and _only_text(input_steps) == config.input:
        config = msgspec.structs.replace(config, input=None)
    return encode(config)


def _only_text(steps: Sequence[Step]) -> str | None:
    """The text of `steps` when they are one user input of one text, as a string `input` makes them."""
    if len(steps) != 1 or not isinstance(steps[0], UserInputStep):
        return None
    content = steps[0].content
    if len(content) != 1 or not isinstance(content[0], TextContent):
        return None
    return content[0].text


#: the hash fields a Record is read from, then its blobs (store/scripts/_body.lua), in the order
#: `record_of` takes their values
META_FIELDS: Final = (
    Field.STATUS,
    Field.CREATED,
    Field.UPDATED,
    Field.PREV,
    Field.BACKGROUND,
    Field.LOG,
    Field.SEQ,
    Field.REMOTE,
)
BLOBS: Final = (Field.CONFIG, Field.INPUT, Field.OUTPUT)


def record_of(interaction_id: str, values: Sequence[Any]) -> Record:
    """The record of META_FIELDS' values and its blobs' (status and config present: the caller checked)."""
    status, created, updated, prev, bg, log, seq, remote, cfg, inp, out = values
    config, input_steps = decode_config(cfg), decode_steps(inp)
    if config.input is None:
        # every create has an input: none stored is the text of its one step (encode_config)
        config.input = _only_text(input_steps)
    return Record(
        id=interaction_id,
        status=text(status),
        created=text(created),
        # left out while it is the creation time (new_records.py)
        updated=text(updated) if updated else text(created),
        previous_interaction_id=text(prev) if prev else None,
        background=bg == b"1",
        logged=log == b"1",
        seq=int(seq or 0),
        remote_id=text(remote) if remote else None,
        config=config,
        input_steps=input_steps,
        output=decode_output(out),
    )
