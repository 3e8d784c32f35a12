"""How `interactions.create(agent=<id>)` runs a stored agent of the tenant.

The request is merged with the agent before anything else looks at it (the MCP servers' checks and the
sealing of their headers then cover the agent's tools too): the agent's system_instruction comes first and
the request's, if any, is appended after a blank line; the agent's tools come first and the request's
after them; the request's agent_config replaces the agent's. Planning (runner/plan.py) then routes the
interaction to the agent's base_agent: the stored config has `model` = base_agent (so a worker, a re-run
and a continued chain need no second lookup) and `agent` = the id the client sent. An `agent` that names no
stored agent of the tenant is left alone: a configured model or agent name, as before.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ..protocol.interaction import CreateRequest, InteractionConfig
from ..store.agents import AgentRecord, Agents
from . import headers
from .rules import is_agent_id


async def with_agent(
    store: Agents, tenant: str, request: CreateRequest, server_keys: Sequence[bytes]
) -> tuple[CreateRequest, AgentRecord | None]:
    """The request merged with the tenant's agent its `agent` names, and that agent (None: no such agent)."""
    name = request.agent
    if not name or request.model or not is_agent_id(name):
        return request, None
    agent = await store.get(tenant, name)
    if agent is None:
        return request, None
    instructions = [text for text in (agent.system_instruction, request.system_instruction) if text]
    own = headers.opened(agent.tools, tenant, agent.id, server_keys) or []
    tools = [*own, *(request.tools or ())]
    merged = msgspec.structs.replace(
        request,
        system_instruction="\n\n".join(instructions) or None,
        tools=tools or None,
        agent_config=request.agent_config if request.agent_config is not None else agent.agent_config,
    )
    return merged, agent


def routed(config: InteractionConfig, agent: AgentRecord) -> InteractionConfig:
    """The config that runs on the agent's base model (`agent` stays as the client sent it)."""
    return msgspec.structs.replace(config, model=agent.base_agent)
