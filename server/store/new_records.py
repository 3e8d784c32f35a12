"""An interaction to store, as create.lua takes it: its hash's fields and values packed in one argument, and
its body (its blobs) in another."""

from __future__ import annotations

from typing import Any

import msgspec

from ..protocol.records import Output, StoredConfig
from ..protocol.steps import Step
from .commands import netstrings
from .idempotency import KeyClaim
from .keys import Field
from .records import encode, encode_config


class NewRecord(msgspec.Struct, kw_only=True):
    """An interaction to store: as it starts, or (for a foreground call nobody can address yet) finished."""

    status: str
    created: str
    updated: str | None = None
    background: bool = False
    logged: bool = False
    seq: int = 0
    config: StoredConfig
    input_steps: list[Step]
    #: set when the record is stored finished
    output: Output | None = None
    #: the model calls it made, for one stored finished (its usage counts them: store/usage.py)
    calls: int = 0
    #: the request's Idempotency-Key, recorded with it (create.lua)
    key: KeyClaim | None = None
    #: the trigger execution that made it (store/triggers.marker), which hears its end
    execution: str | None = None


def packed_fields(record: NewRecord, *, claimed: bool, prev: str | None, depth: int | None = None) -> bytes:
    """The hash's fields and values as netstrings (create.lua's ARGV[10]); `claimed`: the caller runs it
    now (fence 1); `depth`: its place in its chain, when checked before."""
    fields = _fields(record, claimed=claimed)
    if prev:
        fields += [Field.PREV, prev]
    if depth is not None and depth > 1:
        fields += [Field.DEPTH, depth]
    return netstrings(fields)


def body(record: NewRecord) -> bytes:
    """Its blobs, as create.lua stores them apart from its hash (scripts/_body.lua): config, input steps and,
    stored finished, output, as netstrings."""
    blobs = [encode_config(record.config, record.input_steps), encode(record.input_steps)]
    if record.output is not None:
        blobs.append(encode(record.output))
    return netstrings(blobs)


def key_args(key: KeyClaim | None) -> tuple[Any, ...]:
    """create.lua's arguments of an Idempotency-Key (ARGV[19..21])."""
    return (key.name, key.value, key.ttl_ms) if key else ("", "", "")


def _fields(record: NewRecord, *, claimed: bool) -> list[Any]:
    """Fields at their defaults are left out, and read as those (a hash of short values is kept compact
    by Redis only while it is small, and most records are one-turn, foreground and never claimed): bg, log
    "0", fence and attempts 0, updated as created, depth 1 (`packed_fields`), root its own id (create.lua)."""
    fields: list[Any] = [Field.STATUS, record.status, Field.CREATED, record.created, Field.SEQ, record.seq]
    if record.updated and record.updated != record.created:
        fields += [Field.UPDATED, record.updated]
    if record.background:
        fields += [Field.BACKGROUND, "1"]
    if record.logged:
        fields += [Field.LOG, "1"]
    if claimed:
        fields += [Field.FENCE, "1", Field.ATTEMPTS, "1"]
    if configured(record):
        fields += [Field.WEBHOOK_CONFIG, "1"]
    if record.execution is not None:
        fields += [Field.TRIGGER, record.execution]
    return fields


def configured(record: NewRecord) -> bool:
    """Whether the request asked for webhooks of its own (its end is notified with no webhook enabled)."""
    config = record.config.config.webhook_config
    return config is not None and bool(config.uris)


def subscribed(record: NewRecord) -> bool:
    """Whether its end has a subscriber of its own, whatever the tenant's webhooks: the request's
    webhook_config, or the trigger execution that made it (scripts/_notify.lua)."""
    return configured(record) or record.execution is not None
