"""The errors of the MCP servers a request names, placed in the server's tree (server/errors.py).

    InvalidArgument (400)
    └── McpUrlRefused           `tools[i].url` is not a URL we may call (shape, scheme, a refused address,
                                a host that does not resolve): names the field, the host and why
    UpstreamError (server/upstream/base.py: the API answers 502, or 504 for a timeout)
    └── McpServerUnavailable    the server could not be reached, or did not answer as an MCP server, within
                                `[tools] mcp_connect_timeout_seconds`: names the server's `name` and host

Neither message ever holds a header of the request (they carry credentials) nor the text of an exception
of httpx or of the MCP SDK (which could): only the server's name, its host, and a reason in a few words.
"""

from __future__ import annotations

from ..errors import InvalidArgument
from ..upstream.base import UpstreamError

#: the `backend` of an McpServerUnavailable, as UpstreamError's messages name it
BACKEND = "mcp"


class McpUrlRefused(InvalidArgument):
    """A 400 naming `tools[i].url`."""

    def __init__(self, index: int, reason: str, host: str = "") -> None:
        self.host = host
        self.reason = reason
        said = f"the MCP server url's host {host} {reason}" if host else f"the MCP server url {reason}"
        super().__init__(said, f"tools[{index}].url")


class McpServerUnavailable(UpstreamError):
    """An MCP server of the request is down, refused us, or is not an MCP server: the run cannot start."""

    def __init__(self, name: str, host: str, reason: str, *, timeout: bool = False) -> None:
        message = f"the MCP server {name!r} at {host} {reason}"
        super().__init__(BACKEND, 0, message, timeout=timeout)
        self.server_name = name
        self.host = host
        self.reason = reason

    def __str__(self) -> str:
        return self.message
