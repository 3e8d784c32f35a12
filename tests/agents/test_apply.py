"""How a stored agent is merged into a create request, and its MCP headers sealed at rest (no server)."""

from __future__ import annotations

import os
from typing import Any, cast

import msgspec

from server.agents import headers
from server.agents.apply import routed, with_agent
from server.protocol.codec import convert
from server.protocol.interaction import CreateRequest
from server.protocol.tools import FunctionTool, McpServerTool, Tool
from server.store.agents import AgentRecord, Agents

KEY = os.urandom(32)
MCP = {"type": "mcp_server", "name": "files", "url": "https://mcp.example.com/mcp"}


class OneAgent:
    """A store holding one agent of one tenant."""

    def __init__(self, tenant: str, record: AgentRecord) -> None:
        self.tenant, self.record = tenant, record

    async def get(self, tenant: str, agent_id: str) -> AgentRecord | None:
        return self.record if (tenant, agent_id) == (self.tenant, self.record.id) else None


def _tools(*raw: dict[str, Any]) -> list[Tool]:
    return convert(list(raw), list[Tool])


def _agent(tools: list[Tool] | None = None, **fields: Any) -> AgentRecord:
    return AgentRecord(id="desk", create_ms=1, base_agent="echo", tools=tools, **fields)


async def test_the_agents_parts_come_first() -> None:
    record = _agent(
        _tools({"type": "function", "name": "a"}), system_instruction="Agent.", agent_config={"type": "x"}
    )
    store = cast(Agents, OneAgent("t", record))
    request = convert(
        {"agent": "desk", "system_instruction": "Request.", "tools": [{"type": "function", "name": "b"}]},
        CreateRequest,
    )
    merged, found = await with_agent(store, "t", request, [KEY])
    assert found == record
    assert merged.system_instruction == "Agent.\n\nRequest."
    assert [tool.name for tool in merged.tools or [] if isinstance(tool, FunctionTool)] == ["a", "b"]
    assert merged.agent_config == {"type": "x"}
    assert (merged.agent, merged.model) == ("desk", None)
    assert (routed(merged, record).model, routed(merged, record).agent) == ("echo", "desk")
    # the request's agent_config wins
    own = msgspec.structs.replace(request, agent_config={"type": "mine"})
    assert (await with_agent(store, "t", own, [KEY]))[0].agent_config == {"type": "mine"}


async def test_no_agent_leaves_the_request_alone() -> None:
    store = cast(Agents, OneAgent("t", _agent()))
    for body in ({"agent": "desk"}, {"agent": "house-agent"}, {"model": "echo"}, {"agent": "Bad Name!"}):
        request = convert(body, CreateRequest)
        tenant = "other" if body == {"agent": "desk"} else "t"
        assert await with_agent(store, tenant, request, [KEY]) == (request, None)


async def test_mcp_headers_are_sealed_at_rest_and_opened_for_the_run() -> None:
    plain = _tools({**MCP, "headers": {"Authorization": "Bearer s3cret"}})
    sealed = headers.sealed(plain, "t", "desk", KEY)
    assert sealed is not None and "s3cret" not in msgspec.json.encode(sealed, enc_hook=str).decode()
    assert headers.hidden(sealed) == _tools({**MCP, "headers": {"Authorization": "(hidden)"}})
    store = cast(Agents, OneAgent("t", _agent(sealed)))
    merged, _ = await with_agent(store, "t", convert({"agent": "desk"}, CreateRequest), [KEY])
    (tool,) = merged.tools or []
    assert isinstance(tool, McpServerTool) and tool.headers == {"Authorization": "Bearer s3cret"}
