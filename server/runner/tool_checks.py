"""A create's MCP servers checked before anything is stored (tools/checks.py), its agent's among them.

An agent's tools come first in the merged request (agents/apply.py), so an error about one of them names
the agent's field (`agent.tools[0].url`: an agent stored before its create checked its urls, or an address
refused since), and one about the caller's own tools names the place the caller sent it at.
"""

from __future__ import annotations

import re

from ..errors import InvalidArgument
from ..protocol.tools import Tool
from ..sections import ToolSettings
from ..store.agents import AgentRecord
from ..tools import checks
from ..tools.checks import places
from ..webhooks.addresses import AllowList, Resolver, system_resolver

__all__ = ["check_servers", "places"]

_PLACE = re.compile(r"tools\[(\d+)\](.*)")


async def check_servers(
    tools: list[Tool] | None,
    settings: ToolSettings,
    allow: AllowList,
    resolver: Resolver = system_resolver,
    *,
    agent: AgentRecord | None = None,
) -> None:
    """`agent`: the stored agent merged into `tools` (its tools first), whose fields errors then name."""
    try:
        await checks.check_servers(tools, settings, allow, resolver)
    except InvalidArgument as exc:
        if agent is None:
            raise
        raise _placed(exc, agent) from None


def _placed(exc: InvalidArgument, agent: AgentRecord) -> InvalidArgument:
    """The error of a merged request, naming what the caller sent or the agent's own field."""
    place = _PLACE.fullmatch(exc.field or "")
    if place is None:
        return exc
    own, index, rest = len(agent.tools or ()), int(place[1]), place[2]
    if index >= own:
        return InvalidArgument(exc.message, f"tools[{index - own}]{rest}")
    return InvalidArgument(f"{exc.message} (a tool of the agent {agent.id!r})", f"agent.tools[{index}]{rest}")
