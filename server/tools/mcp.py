"""The remote MCP servers of one run (`mcp_server` tools): connected once, called for every tool call of the
run, closed with it.

`McpSessions.open` checks the request's servers (selection.py: at most `[tools] max_servers`, each with a
name of its own and a url), then every url against the address rules of webhooks (`addresses.check_uri`:
no loopback, private, link-local or metadata address unless `[webhooks] allow` lists it) before any is
called, then connects to all of them at once over Streamable HTTP with the official `mcp` SDK
(connection.py), each within `[tools] mcp_connect_timeout_seconds`, and lists their tools, filtered by
their `allowed_tools` (selection.py). The connection is made to the checked addresses themselves (the host
is kept for Host, SNI and the certificate), so DNS answering differently after the check changes nothing;
through a proxy (`outbound`: HTTPS_PROXY / HTTP_PROXY, NO_PROXY) the url is checked the same, and the proxy
connects (connection.py).

`call` never raises for what the server does: a tool the server did not offer, an `isError` result, a
call slower than `[tools] mcp_call_timeout_seconds`, a server gone or answering nonsense, all come back
as a `CallResult` with `is_error` (the model sees it, the run goes on). Only the cancellation of the
calling task goes through it: the call is abandoned, its request closed (connection.py says how).

`headers` are credentials: they are sent on the connection's every request and appear nowhere else — not
in an exception's message, a log line, or a repr.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import mcp_types
import msgspec
from mcp.shared.exceptions import MCPError

from ..outbound import Outbound
from ..protocol.tools import McpServerTool
from ..sections import ToolSettings
from ..webhooks.addresses import AllowList, CheckedUri, Resolver, UriRefused, check_uri, system_resolver
from .connection import Connection
from .errors import McpUrlRefused
from .results import bounded, shape
from .selection import Server, servers_of

log = logging.getLogger(__name__)


class McpTool(msgspec.Struct, frozen=True):
    """A tool an MCP server offers the run."""

    #: the `mcp_server` tool's `name`
    server_name: str
    #: the MCP tool's name
    name: str
    description: str | None
    #: the JSON Schema of its arguments
    input_schema: dict[str, Any]


class CallResult(msgspec.Struct, frozen=True):
    """What a call came to: `result` as results.py shapes it (text, a structuredContent object, or a
    content list), already bounded by `[tools] max_result_bytes`."""

    result: Any
    #: the server's `isError`, or a call that failed (timeout, server gone, a tool not offered)
    is_error: bool


class McpSessions:
    """The MCP servers of one run: connected once, used for every call of the run, closed with it."""

    def __init__(self, connections: list[Connection], settings: ToolSettings) -> None:
        self._connections = {connection.server.name: connection for connection in connections}
        self._settings = settings
        self.tools: list[McpTool] = [
            McpTool(connection.server.name, tool.name, tool.description, dict(tool.input_schema))
            for connection in connections
            for tool in connection.tools
            if connection.server.allowed.allows(tool.name)
        ]
        self._offered = {(tool.server_name, tool.name) for tool in self.tools}

    @classmethod
    async def open(
        cls,
        servers: Sequence[McpServerTool],
        settings: ToolSettings,
        allow: AllowList,
        resolver: Resolver = system_resolver,
        *,
        indexes: Sequence[int] | None = None,
        outbound: Outbound | None = None,
    ) -> McpSessions:
        """Every server connected and listed, or an error and nothing left open: InvalidArgument (400) for
        the request itself, McpUrlRefused (400, `tools[i].url`) for a url we will not call,
        McpServerUnavailable (502; 504 for a timeout) for a server that could not be used. `indexes`: each
        server's place in the request's `tools` (what the errors name), by default its place in `servers`.
        `outbound`: the process's proxies and trust store (None: the environment's, read now)."""
        checked = servers_of(servers, indexes, settings.max_servers)
        uris = [await check_server(server, allow, resolver) for server in checked]
        outbound = outbound if outbound is not None else Outbound.from_environment()
        connections = [Connection(server, uri, outbound) for server, uri in zip(checked, uris, strict=True)]
        outcomes = await asyncio.gather(
            *(connection.connect(settings.mcp_connect_timeout_seconds) for connection in connections),
            return_exceptions=True,
        )
        failure = next((outcome for outcome in outcomes if isinstance(outcome, BaseException)), None)
        if failure is not None:
            await asyncio.gather(*(connection.close() for connection in connections))
            raise failure
        return cls(connections, settings)

    async def call(self, server_name: str, tool: str, arguments: dict[str, Any]) -> CallResult:
        """The tool's result; see the module's docstring for what becomes an error result."""
        connection = self._connections.get(server_name)
        if connection is None:
            return CallResult(f"There is no MCP server named {server_name!r}", True)
        if (server_name, tool) not in self._offered:
            return CallResult(f"The MCP server {server_name!r} offers no tool named {tool!r}", True)
        client = connection.client
        if client is None or not connection.alive:
            return CallResult(f"The MCP server {server_name!r} is no longer connected", True)
        timeout = self._settings.mcp_call_timeout_seconds
        try:
            async with asyncio.timeout(timeout):
                result = await client.call_tool(tool, arguments)
        except TimeoutError:
            outcome = CallResult(f"The tool {tool!r} did not answer within {timeout:g} s", True)
        except MCPError as exc:
            outcome = CallResult(f"The MCP server {server_name!r} answered an error: {exc.message}", True)
        except Exception as exc:  # the connection broke, or the server answered something unreadable
            log.warning("MCP call %s/%s failed: %s", server_name, tool, type(exc).__name__)
            outcome = CallResult(f"The call to the MCP server {server_name!r} failed", True)
        else:
            outcome = _outcome(result)
        return CallResult(bounded(outcome.result, self._settings.max_result_bytes), outcome.is_error)

    async def aclose(self) -> None:
        """Closes every connection (their tasks ended, within seconds); safe twice and when cancelled."""
        await asyncio.gather(*(connection.close() for connection in self._connections.values()))


def _outcome(result: mcp_types.CallToolResult) -> CallResult:
    return CallResult(shape(result), bool(result.is_error))


async def check_server(server: Server, allow: AllowList, resolver: Resolver = system_resolver) -> CheckedUri:
    """The server's url under the webhooks' address rules, or McpUrlRefused naming `tools[i].url`."""
    try:
        return await check_uri(server.url, allow, resolver)
    except UriRefused as exc:
        raise McpUrlRefused(server.index, exc.reason, exc.host) from None
