"""Interaction objects as the API returns them, from what the runner or the store holds (pure)."""

from __future__ import annotations

import time
from typing import Final

import msgspec

from .interaction import Interaction, InteractionConfig
from .lifecycle import wire_status
from .records import Output, Record, StoredConfig
from .steps import Step
from .tools import McpServerTool

_last_second = -1
_last_stamp = ""


_NO_OUTPUT = Output()


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
    output: Output | None = None,
    steps: list[Step] | None = None,
) -> Interaction:
    """The interaction with `output` (its steps, unless `steps` says otherwise: get's full timeline)."""
    output = output or _NO_OUTPUT
    return Interaction(
        **msgspec.structs.asdict(_hide_headers(config.config)),
        id=interaction_id,
        object="interaction",
        status=wire_status(status),
        created=created,
        updated=updated,
        previous_interaction_id=previous_interaction_id,
        steps=list(output.steps) if steps is None else steps,
        usage=output.usage,
        errors=output.errors,
    )


#: what an interaction shows in place of the value of an `mcp_server` tool's header (a credential)
HIDDEN_HEADER: Final = "(hidden)"


def _hide_headers(config: InteractionConfig) -> InteractionConfig:
    """The config as an interaction shows it: its MCP servers' header names, never their values."""
    tools = config.tools
    if not tools or not any(isinstance(tool, McpServerTool) and tool.headers for tool in tools):
        return config
    shown = [
        msgspec.structs.replace(tool, headers=dict.fromkeys(tool.headers, HIDDEN_HEADER))
        if isinstance(tool, McpServerTool) and tool.headers
        else tool
        for tool in tools
    ]
    return msgspec.structs.replace(config, tools=shown)


def from_record(record: Record, *, full_timeline: bool, include_input: bool = False) -> Interaction:
    """`full_timeline`: get's view, this turn's input steps before the output (spec §4)."""
    output = record.output or _NO_OUTPUT
    view = interaction(
        interaction_id=record.id,
        status=record.status,
        config=record.config,
        created=record.created,
        updated=record.updated,
        previous_interaction_id=record.previous_interaction_id,
        output=output,
        steps=[*record.input_steps, *output.steps] if full_timeline else None,
    )
    if include_input:
        view.input = record.config.input
    return view


def snapshot(
    interaction_id: str | None, config: StoredConfig, created: str, status: str = "in_progress"
) -> Interaction:
    """The interaction as `interaction.created` shows it: no output yet."""
    return Interaction(
        id=interaction_id,
        object="interaction",
        status=wire_status(status),
        model=config.config.model,
        agent=config.config.agent,
        created=created,
        updated=created,
    )
