"""The `headers` of the `mcp_server` tools in a trigger's interaction carry credentials: stored sealed,
shown hidden, opened only when an execution creates its interaction (whose own rules apply from there:
runner/tool_headers.py), as an agent's are (agents/headers.py).

The template is kept as the client's JSON, so this works on its decoded form: `tools[i].headers` of every
tool whose `type` is `mcp_server`. Sealed with the server key (webhooks/secrets.py: AES-256-GCM), bound to
the tenant and the trigger's id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from ..webhooks import secrets

#: what a trigger shows in place of a header's value
HIDDEN: Final = "(hidden)"


def _context(tenant: str, trigger_id: str) -> bytes:
    return f"trigger-mcp-headers:{tenant}:{trigger_id}".encode()


def _each_header(template: dict[str, Any], change: Callable[[str], str]) -> dict[str, Any]:
    """A copy of the template with `change` applied to each MCP header value (itself if it has none)."""
    tools = template.get("tools")
    if not isinstance(tools, list) or not any(_headers(tool) for tool in tools):
        return template
    changed = [
        {**tool, "headers": {name: change(value) for name, value in _headers(tool).items()}}
        if _headers(tool)
        else tool
        for tool in tools
    ]
    return {**template, "tools": changed}


def _headers(tool: Any) -> dict[str, str]:
    if not isinstance(tool, dict) or tool.get("type") != "mcp_server":
        return {}
    found = tool.get("headers")
    if not isinstance(found, dict):
        return {}
    return {str(name): str(value) for name, value in found.items()}


def sealed(template: dict[str, Any], tenant: str, trigger_id: str, server_key: bytes) -> dict[str, Any]:
    context = _context(tenant, trigger_id)
    return _each_header(template, lambda value: secrets.seal(value.encode(), server_key, context=context))


def opened(
    template: dict[str, Any], tenant: str, trigger_id: str, server_keys: Sequence[bytes]
) -> dict[str, Any]:
    context = _context(tenant, trigger_id)
    return _each_header(template, lambda value: secrets.unseal(value, server_keys, context=context).decode())


def hidden(template: dict[str, Any]) -> dict[str, Any]:
    return _each_header(template, lambda _value: HIDDEN)
