"""A create naming MCP servers, checked before anything is stored: each a name (the model tells the
servers' tools apart by it), unique, at most `[tools] max_servers` of them, and a URL this server may call
(the webhooks' address rules: a private, loopback or metadata address is a 400 naming the field, unless
`[webhooks] allow` lists it)."""

from __future__ import annotations

from ..errors import InvalidArgument
from ..protocol.tools import McpServerTool, Tool
from ..sections import ToolSettings
from ..webhooks.addresses import AllowList, Resolver, UriRefused, check_uri, system_resolver


async def check_servers(
    tools: list[Tool] | None, settings: ToolSettings, allow: AllowList, resolver: Resolver = system_resolver
) -> None:
    servers = [(index, tool) for index, tool in enumerate(tools or ()) if isinstance(tool, McpServerTool)]
    if len(servers) > settings.max_servers:
        raise InvalidArgument(f"at most {settings.max_servers} mcp_server tools are allowed", "tools")
    names: set[str] = set()
    for index, server in servers:
        if not server.name:
            raise InvalidArgument("an mcp_server tool needs a name", f"tools[{index}].name")
        if server.name in names:
            raise InvalidArgument(f"two mcp_server tools are named {server.name!r}", f"tools[{index}].name")
        names.add(server.name)
        if not server.url:
            raise InvalidArgument("an mcp_server tool needs a url", f"tools[{index}].url")
        try:
            await check_uri(server.url, allow, resolver)
        except UriRefused as exc:
            raise InvalidArgument(
                exc.message.replace("webhook uri", "MCP server url"), f"tools[{index}].url"
            ) from None
