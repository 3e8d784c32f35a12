"""The Agents resource on the wire (Google's shapes, as the SDK's `_gaos/types/agents` parse them)."""

from __future__ import annotations

from typing import Any

import msgspec

from ..protocol.tools import Tool
from ..store.agents import AgentRecord
from .headers import hidden


class Agent(msgspec.Struct, kw_only=True, omit_defaults=True):
    id: str
    description: str | None = None
    #: the configured model or agent name it runs on
    base_agent: str
    system_instruction: str | None = None
    tools: list[Tool] | None = None
    agent_config: dict[str, Any] | None = None


class AgentList(msgspec.Struct, kw_only=True, omit_defaults=True):
    agents: list[Agent] = []
    next_page_token: str | None = None


class CreateAgent(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The SDK's `agents.create` body: every field optional there; `base_agent` is required here."""

    id: str | None = None
    description: str | None = None
    base_agent: str | None = None
    #: refused unless empty: this server runs agents without a sandbox environment
    base_environment: Any = None
    system_instruction: str | None = None
    tools: list[Tool] | None = None
    agent_config: dict[str, Any] | None = None


def view(record: AgentRecord) -> Agent:
    return Agent(
        id=record.id,
        description=record.description,
        base_agent=record.base_agent,
        system_instruction=record.system_instruction,
        tools=hidden(record.tools),
        agent_config=record.agent_config,
    )
