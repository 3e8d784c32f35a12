"""An interaction as this server keeps it: the blobs of its record and the record as read back.

Pure data, shared by the store (which encodes them), the runner and the views."""

from __future__ import annotations

from typing import Any

import msgspec

from .base import Wire
from .interaction import ErrorInfo, InteractionConfig, Usage
from .steps import Step


class StoredConfig(Wire):
    """The `cfg` blob: written once at create."""

    config: InteractionConfig
    #: `input` as the client sent it, for `get(include_input=true)`
    input: Any = None
    warnings: list[str] | None = None
    #: the dialect it was made through when that one lists its own (CHAT_COMPLETIONS: a stored chat
    #: completion, which OpenAI's list of them shows and no other); None: any other
    dialect: str | None = None


#: StoredConfig.dialect of a stored chat completion (server/api/openai/chat.py)
CHAT_COMPLETIONS = "chat.completions"


class Output(Wire):
    """The `out` blob: written when the run ends."""

    steps: list[Step] = []
    usage: Usage | None = None
    errors: list[ErrorInfo] | None = None


class Record(msgspec.Struct, kw_only=True):
    """One interaction as read back from Redis. `status` is its lifecycle state (protocol.lifecycle),
    which may be `cancelling`; the views show clients the wire status."""

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
    #: the upstream's own run of its turn, when the upstream runs it remotely (a Google agent's)
    remote_id: str | None = None
