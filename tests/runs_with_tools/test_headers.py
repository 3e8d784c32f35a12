"""The `headers` of an `mcp_server` tool (credentials): sealed at rest, opened for a run, hidden in views."""

from __future__ import annotations

import os

import pytest

from server.protocol import views
from server.protocol.interaction import InteractionConfig
from server.protocol.records import StoredConfig
from server.protocol.tools import FunctionTool, McpServerTool
from server.runner import tool_headers
from server.webhooks.secrets import BrokenSeal

KEY = os.urandom(32)
SECRET = "Bearer s3cr3t-value"


def _config() -> InteractionConfig:
    return InteractionConfig(
        model="echo",
        tools=[
            FunctionTool(name="f"),
            McpServerTool(name="docs", url="https://mcp.example/mcp", headers={"Authorization": SECRET}),
        ],
    )


def test_sealed_values_open_for_the_same_tenant_only() -> None:
    sealed = tool_headers.seal(_config(), "tenant-a", KEY)
    server = sealed.tools[1] if sealed.tools else None
    assert isinstance(server, McpServerTool) and server.headers
    assert SECRET not in server.headers["Authorization"]
    assert server.headers["Authorization"].startswith("ixs1.")
    assert tool_headers.opened(server, "tenant-a", [KEY]).headers == {"Authorization": SECRET}
    with pytest.raises(BrokenSeal):
        tool_headers.opened(server, "tenant-b", [KEY])


def test_a_stateless_runs_headers_are_used_as_sent() -> None:
    server = McpServerTool(name="docs", url="https://mcp.example/mcp", headers={"X-Key": "plain"})
    assert tool_headers.opened(server, None, [KEY]).headers == {"X-Key": "plain"}


def test_an_interaction_shows_header_names_not_values() -> None:
    for config in (_config(), tool_headers.seal(_config(), "tenant-a", KEY)):
        shown = views.interaction(
            interaction_id="v1_x",
            status="completed",
            config=StoredConfig(config=config),
            created="t",
            updated="t",
        )
        assert shown.tools is not None
        server = shown.tools[1]
        assert isinstance(server, McpServerTool)
        assert server.headers == {"Authorization": views.HIDDEN_HEADER}
