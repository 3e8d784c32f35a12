"""An agent's MCP server urls are checked when it is created, by the rules a create's are (the webhooks'
address rules, `[webhooks] allow`), naming the agent body's field; an agent stored before that check (or
whose address is refused since) is refused when an interaction names it, naming the agent's own field,
and the caller's own tools keep the places the caller sent them at. In-process, on a private Redis."""

from __future__ import annotations

from typing import Any

import pytest

from server.agents.wire import CreateAgent
from server.errors import InvalidArgument
from server.protocol.tools import FunctionTool, McpServerTool, Tool
from server.runtime import Runtime
from server.store.agents import AgentRecord

from ..runner.harness import create

TENANT = "t-agents"
#: a public address literal: it passes the checks without DNS, and nothing connects to it here
PUBLIC = "https://93.184.216.34/mcp"
FUNCTION = FunctionTool(name="lookup", parameters={"type": "object"})


def mcp(url: str, name: str = "files") -> McpServerTool:
    return McpServerTool(name=name, url=url)


async def refusal(call: Any) -> InvalidArgument:
    with pytest.raises(InvalidArgument) as raised:
        await call
    return raised.value


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("file:///etc/passwd", "must be http:// or https://, not file:"),
        ("http://169.254.169.254/latest/meta-data/", "the cloud metadata address"),
        ("http://127.0.0.1:8000/mcp", "a loopback address"),
        ("http://[::1/mcp", "has a malformed host"),
        ("http://10.0.0.7/mcp", "a private address"),
    ],
)
async def test_an_agent_with_an_mcp_url_we_may_not_call_is_not_created(
    runtime: Runtime, url: str, why: str
) -> None:
    tools: list[Tool] = [FUNCTION, mcp(url)]
    refused = await refusal(runtime.agents.create(TENANT, CreateAgent(base_agent="echo", tools=tools)))
    assert refused.field == "tools[1].url" and why in refused.message, refused
    assert (await runtime.agents.page(TENANT, None, None)).agents == []


async def test_an_agent_with_callable_mcp_urls_is_created(runtime: Runtime) -> None:
    made = await runtime.agents.create(TENANT, CreateAgent(base_agent="echo", tools=[mcp(PUBLIC)]))
    assert made.tools == [mcp(PUBLIC)]
    twice: list[Tool] = [mcp(PUBLIC), mcp(PUBLIC)]
    refused = await refusal(runtime.agents.create(TENANT, CreateAgent(base_agent="echo", tools=twice)))
    assert refused.field == "tools[1].name"


async def test_an_agent_stored_before_the_check_is_refused_naming_its_own_field(runtime: Runtime) -> None:
    old = AgentRecord(id="old-agent", create_ms=1, base_agent="echo", tools=[FUNCTION, mcp("file:///x")])
    assert await runtime.store.agents.create(TENANT, old, 100)
    refused = await refusal(create(runtime, TENANT, {"agent": "old-agent", "input": "hi"}))
    assert refused.field == "agent.tools[1].url", refused
    assert "not file:" in refused.message and "'old-agent'" in refused.message
    # the caller's tools beside it: still the agent's field that is named
    body = {
        "agent": "old-agent",
        "input": "hi",
        "tools": [{"type": "mcp_server", "name": "b", "url": PUBLIC}],
    }
    assert (await refusal(create(runtime, TENANT, body))).field == "agent.tools[1].url"


async def test_the_callers_own_tools_are_named_where_the_caller_put_them(runtime: Runtime) -> None:
    """The agent's tools come first in the merged request: an error about the caller's tools[0] must not
    name tools[2], which the caller never sent."""
    agent = await runtime.agents.create(TENANT, CreateAgent(base_agent="echo", tools=[FUNCTION, mcp(PUBLIC)]))
    bad = {"type": "mcp_server", "name": "mine", "url": "http://169.254.169.254/"}
    body = {"agent": agent.id, "input": "hi", "tools": [bad]}
    refused = await refusal(create(runtime, TENANT, body))
    assert refused.field == "tools[0].url" and "metadata" in refused.message, refused
    same_name = {"agent": agent.id, "input": "hi", "tools": [{**bad, "name": "files", "url": PUBLIC}]}
    assert (await refusal(create(runtime, TENANT, same_name))).field == "tools[0].name"
