"""The `headers` of a request's `mcp_server` tools carry credentials: kept sealed, shown hidden.

A stored interaction keeps its request's tools (a worker runs it, a continued turn reads them), so each
header value is sealed with the server key before the record is written (webhooks/secrets.py: AES-256-GCM,
bound to the tenant) and opened only when a run connects to the MCP server. An interaction as answered
shows the header names with their values hidden (protocol/views.py). A `store=false` request is never
written: its headers stay as sent, in memory, for its one run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, TypeVar

import msgspec

from ..protocol.interaction import InteractionConfig
from ..protocol.tools import McpServerTool, Tool
from ..webhooks import secrets

_SEALED: Final = secrets.FORMAT + "."
C = TypeVar("C", bound=InteractionConfig)


def _context(tenant: str) -> bytes:
    return f"mcp-headers:{tenant}".encode()


def seal(config: C, tenant: str, server_key: bytes) -> C:
    """The config with every MCP header value sealed (a config without any is returned as it is)."""
    if not _has_headers(config.tools):
        return config
    context = _context(tenant)

    def sealed(tool: Tool) -> Tool:
        if not isinstance(tool, McpServerTool) or not tool.headers:
            return tool
        values = {
            name: secrets.seal(value.encode(), server_key, context=context)
            for name, value in tool.headers.items()
        }
        return msgspec.structs.replace(tool, headers=values)

    return msgspec.structs.replace(config, tools=[sealed(tool) for tool in config.tools or ()])


def opened(tool: McpServerTool, tenant: str | None, server_keys: Sequence[bytes]) -> McpServerTool:
    """The tool with its header values as the client sent them (sealed ones opened)."""
    if not tool.headers or tenant is None:
        return tool
    context = _context(tenant)
    values = {
        name: secrets.unseal(value, server_keys, context=context).decode()
        if value.startswith(_SEALED)
        else value
        for name, value in tool.headers.items()
    }
    return msgspec.structs.replace(tool, headers=values)


def _has_headers(tools: list[Tool] | None) -> bool:
    return any(isinstance(tool, McpServerTool) and tool.headers for tool in tools or ())
