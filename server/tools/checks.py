"""A list of tools' MCP servers checked before anything is stored: names, urls and `allowed_tools`
(selection.py), at most `[tools] max_servers` of them, and each url one this server may call (the
webhooks' address rules: mcp.py) — a 400 naming `tools[i]...`, rather than a run that fails later. What a
create (runner/tool_checks.py) and an agent's create (agents/resource.py) both check."""

from __future__ import annotations

from ..protocol.tools import McpServerTool, Tool
from ..sections import ToolSettings
from ..webhooks.addresses import AllowList, Resolver, system_resolver
from .mcp import check_server
from .selection import servers_of


def places(tools: list[Tool] | None) -> tuple[list[McpServerTool], list[int]]:
    """The MCP servers among `tools` and their places in it (what errors name)."""
    found = [(index, tool) for index, tool in enumerate(tools or ()) if isinstance(tool, McpServerTool)]
    return [tool for _, tool in found], [index for index, _ in found]


async def check_servers(
    tools: list[Tool] | None, settings: ToolSettings, allow: AllowList, resolver: Resolver = system_resolver
) -> None:
    servers, indexes = places(tools)
    for server in servers_of(servers, indexes, settings.max_servers):
        await check_server(server, allow, resolver)
