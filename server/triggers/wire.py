"""The Triggers resource on the wire (Google's shapes, as the SDK's `_gaos/types/triggers` parse them)."""

from __future__ import annotations

import time
from typing import Any

import msgspec

from ..protocol.codec import json_encoder
from ..store.triggers import ExecutionRecord, TriggerRecord
from .headers import hidden


class CreateTrigger(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The SDK's `triggers.create` body; `interaction`, `schedule` and `time_zone` are required."""

    interaction: Any = None
    schedule: str | None = None
    time_zone: str | None = None
    display_name: str | None = None
    #: refused unless empty: this server runs interactions without a sandbox environment
    environment_id: str | None = None
    execution_timeout_seconds: int | None = None
    max_consecutive_failures: int | None = None


class UpdateTrigger(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The SDK's `triggers.update` body (TriggerUpdate): its display name and status."""

    display_name: str | None = None
    status: str | None = None


class Trigger(msgspec.Struct, kw_only=True, omit_defaults=True):
    id: str
    interaction: msgspec.Raw
    schedule: str
    time_zone: str
    display_name: str | None = None
    execution_timeout_seconds: int
    max_consecutive_failures: int | None = None
    status: str
    consecutive_failure_count: int
    create_time: str
    update_time: str
    next_run_time: str | None = None
    last_run_time: str | None = None
    last_pause_time: str | None = None
    last_resume_time: str | None = None
    previous_interaction_id: str | None = None


class TriggerList(msgspec.Struct, kw_only=True, omit_defaults=True):
    triggers: list[Trigger] = []
    next_page_token: str | None = None


class Execution(msgspec.Struct, kw_only=True, omit_defaults=True):
    id: str
    trigger_id: str
    status: str
    scheduled_time: str
    start_time: str | None = None
    end_time: str | None = None
    interaction_id: str | None = None
    error: str | None = None


class ExecutionList(msgspec.Struct, kw_only=True, omit_defaults=True):
    trigger_executions: list[Execution] = []
    next_page_token: str | None = None


def stamp(ms: int | None) -> str | None:
    """A time in ms as the API writes times (`2026-06-01T12:00:00Z`, with its milliseconds if any)."""
    if ms is None:
        return None
    second = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000))
    return f"{second}.{ms % 1000:03d}Z" if ms % 1000 else f"{second}Z"


def view(record: TriggerRecord) -> Trigger:
    config = record.config
    return Trigger(
        id=config.id,
        interaction=_shown(config.interaction),
        schedule=config.schedule,
        time_zone=config.time_zone,
        display_name=record.display_name,
        execution_timeout_seconds=config.execution_timeout_seconds,
        max_consecutive_failures=config.max_consecutive_failures or None,
        status=record.status,
        consecutive_failure_count=record.fails,
        create_time=stamp(config.create_ms) or "",
        update_time=stamp(record.update_ms) or "",
        # a paused trigger (or one in error) runs at no time until it is resumed
        next_run_time=stamp(record.next_ms) if record.status == "active" else None,
        last_run_time=stamp(record.last_run_ms),
        last_pause_time=stamp(record.last_pause_ms),
        last_resume_time=stamp(record.last_resume_ms),
        previous_interaction_id=record.previous_interaction_id,
    )


def execution_view(trigger_id: str, record: ExecutionRecord) -> Execution:
    return Execution(
        id=record.id,
        trigger_id=trigger_id,
        status=record.status,
        scheduled_time=stamp(record.scheduled) or "",
        start_time=stamp(record.start),
        end_time=stamp(record.end),
        interaction_id=record.ix,
        error=record.error,
    )


_template = msgspec.json.Decoder(dict[str, Any]).decode


def _shown(interaction: msgspec.Raw) -> msgspec.Raw:
    """The interaction as stored, its MCP header values hidden (headers.py)."""
    if b'"headers"' not in bytes(interaction):
        return interaction
    return msgspec.Raw(json_encoder.encode(hidden(_template(interaction))))
