"""The `headers` of an agent's `mcp_server` tools carry credentials: stored sealed, shown hidden.

Each header value is sealed with the server key when the agent is created (webhooks/secrets.py: AES-256-GCM,
bound to the tenant and the agent's id), shown as "(hidden)" by create, get and list, and opened only when
an interaction that names the agent is created: from there on the interaction's own rules apply (a stored
interaction seals its tools' headers again, runner/tool_headers.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

import msgspec

from ..protocol.tools import McpServerTool, Tool
from ..webhooks import secrets

#: what an agent shows in place of a header's value
HIDDEN: Final = "(hidden)"


def _context(tenant: str, agent_id: str) -> bytes:
    return f"agent-mcp-headers:{tenant}:{agent_id}".encode()


def _each_header(tools: list[Tool] | None, change: Callable[[str], str]) -> list[Tool] | None:
    if not tools or not any(isinstance(tool, McpServerTool) and tool.headers for tool in tools):
        return tools
    return [
        msgspec.structs.replace(tool, headers={name: change(value) for name, value in tool.headers.items()})
        if isinstance(tool, McpServerTool) and tool.headers
        else tool
        for tool in tools
    ]


def sealed(tools: list[Tool] | None, tenant: str, agent_id: str, server_key: bytes) -> list[Tool] | None:
    context = _context(tenant, agent_id)
    return _each_header(tools, lambda value: secrets.seal(value.encode(), server_key, context=context))


def opened(
    tools: list[Tool] | None, tenant: str, agent_id: str, server_keys: Sequence[bytes]
) -> list[Tool] | None:
    context = _context(tenant, agent_id)
    return _each_header(tools, lambda value: secrets.unseal(value, server_keys, context=context).decode())


def hidden(tools: list[Tool] | None) -> list[Tool] | None:
    return _each_header(tools, lambda _value: HIDDEN)
