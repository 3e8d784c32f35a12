"""A request's `mcp_server` tools checked before anything is called, and their `allowed_tools` read.

`allowed_tools` is Google's list of `{"mode": ..., "tools": [names]}`. Absent or empty, every tool the server
lists is offered. Otherwise each entry offers the tools it names (all of them when it names none) — whatever
its mode (`auto`, `any`, `validated` or none): how the model must use the tools it is offered is
`generation_config.tool_choice`'s business, not a server's — except `none`, whose tools are withheld (an
entry `{"mode": "none"}` without names withholds every tool of the server). Withholding wins over offering.
A tool named but not listed by the server is ignored. Any other mode, or names that are not strings, is a
400 naming the field.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidArgument
from ..protocol.tools import McpServerTool

MODES = frozenset({"auto", "any", "validated", "none"})


@dataclass(frozen=True, slots=True)
class Allowed:
    """Which of a server's tools are offered: `offered` None means every one; `withheld` wins."""

    offered: frozenset[str] | None = None
    withheld: frozenset[str] = frozenset()
    withhold_all: bool = False

    def allows(self, name: str) -> bool:
        if self.withhold_all or name in self.withheld:
            return False
        return self.offered is None or name in self.offered


@dataclass(frozen=True, slots=True)
class Server:
    """One `mcp_server` tool, checked: `index` is its place in the request's `tools`."""

    index: int
    name: str
    url: str
    #: credentials: sent on the connection, never shown (not in repr, not in messages)
    headers: dict[str, str] = field(repr=False)
    allowed: Allowed


def servers_of(
    tools: Sequence[McpServerTool], indexes: Sequence[int] | None, max_servers: int
) -> list[Server]:
    """The servers, or InvalidArgument: too many, a name or url missing, a name used twice, a bad
    `allowed_tools`."""
    places = list(indexes) if indexes is not None else list(range(len(tools)))
    if len(places) != len(tools):
        raise ValueError("one index per server")
    if len(tools) > max_servers:
        raise InvalidArgument(f"at most {max_servers} MCP servers may be named in one request", "tools")
    servers: list[Server] = []
    seen: dict[str, int] = {}
    for index, tool in zip(places, tools, strict=True):
        if not tool.name:
            raise InvalidArgument("an mcp_server tool needs a name", f"tools[{index}].name")
        if not tool.url:
            raise InvalidArgument("an mcp_server tool needs a url", f"tools[{index}].url")
        if tool.name in seen:
            raise InvalidArgument(
                f"the MCP server name {tool.name!r} is used by tools[{seen[tool.name]}] already",
                f"tools[{index}].name",
            )
        seen[tool.name] = index
        allowed = read_allowed(tool.allowed_tools, f"tools[{index}].allowed_tools")
        servers.append(Server(index, tool.name, tool.url, dict(tool.headers or {}), allowed))
    return servers


def read_allowed(entries: list[dict[str, Any]] | None, where: str) -> Allowed:
    if not entries:
        return Allowed()
    offered: set[str] = set()
    # only entries that withhold: every other tool is offered
    offers_all = all(entry.get("mode") == "none" for entry in entries)
    withheld: set[str] = set()
    withhold_all = False
    for number, entry in enumerate(entries):
        mode = entry.get("mode")
        if mode is not None and mode not in MODES:
            raise InvalidArgument(f"mode must be one of {sorted(MODES)}", f"{where}[{number}].mode")
        names = entry.get("tools")
        if names is not None and (
            not isinstance(names, list) or not all(isinstance(name, str) for name in names)
        ):
            raise InvalidArgument("tools must be a list of tool names", f"{where}[{number}].tools")
        if mode == "none":
            withhold_all = withhold_all or names is None
            withheld.update(names or ())
        elif names is None:
            offers_all = True
        else:
            offered.update(names)
    return Allowed(None if offers_all else frozenset(offered), frozenset(withheld), withhold_all)
