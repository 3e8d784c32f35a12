"""Interaction objects as the API returns them, from what the runner or the store holds (pure)."""

from __future__ import annotations

import time
from typing import Any

import msgspec

from .interaction import ErrorInfo, Interaction, Usage
from .lifecycle import wire_status
from .records import Record, StoredConfig
from .steps import Step

_last_second = -1
_last_stamp = ""


def timestamp() -> str:
    """Now, as the API writes times (`2026-06-01T12:00:00Z`); formatted once a second."""
    global _last_second, _last_stamp
    second = int(time.time())
    if second != _last_second:
        _last_second, _last_stamp = second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))
    return _last_stamp


def interaction(
    *,
    interaction_id: str | None,
    status: str,
    config: StoredConfig,
    created: str,
    updated: str,
    previous_interaction_id: str | None = None,
    steps: list[Step] | None = None,
    usage: Usage | None = None,
    errors: list[ErrorInfo] | None = None,
    input: Any = None,
    warnings: bool = False,
) -> Interaction:
    return Interaction(
        **msgspec.structs.asdict(config.config),
        id=interaction_id,
        object="interaction",
        status=wire_status(status),
        created=created,
        updated=updated,
        previous_interaction_id=previous_interaction_id,
        steps=steps,
        usage=usage,
        errors=errors,
        input=input,
        warnings=(config.warnings or None) if warnings else None,
    )


def from_record(record: Record, *, full_timeline: bool, include_input: bool = False) -> Interaction:
    """`full_timeline`: get's view, this turn's input steps before the output (spec §4)."""
    output = record.output
    steps = list(output.steps) if output else []
    if full_timeline:
        steps = [*record.input_steps, *steps]
    return interaction(
        interaction_id=record.id,
        status=record.status,
        config=record.config,
        created=record.created,
        updated=record.updated,
        previous_interaction_id=record.previous_interaction_id,
        steps=steps,
        usage=output.usage if output else None,
        errors=output.errors if output else None,
        input=record.config.input if include_input else None,
    )


def snapshot(
    interaction_id: str | None, config: StoredConfig, created: str, status: str = "in_progress"
) -> Interaction:
    """The interaction as `interaction.created` shows it: no output yet."""
    return Interaction(
        id=interaction_id,
        object="interaction",
        status=status,
        model=config.config.model,
        agent=config.config.agent,
        created=created,
        updated=created,
    )
