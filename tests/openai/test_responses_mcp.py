"""`mcp` tools of the Responses API, run by this server on the machinery of Google's `mcp_server` tools: a
real MCP server on loopback (tests/fakes/mcp_server.py), the built-in echo model calling its first tool, the
app in this process (with loopback allowed as an MCP address), the openai SDK as the client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai import BadRequestError, OpenAI
from openai.types.responses import ResponseOutputItem

from server.protocol.views import HIDDEN_HEADER
from tests.fakes.mcp_server import RunningMcp, serving

from ..inproc import ThreadedApp, threaded
from ..support import new_key
from .checks import valid
from .conftest import openai_base

TOKEN = "mcp-s3cr3t-51c9"


@pytest.fixture(scope="module")
def mcp() -> Iterator[RunningMcp]:
    with serving() as running:
        yield running


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedApp]:
    config = {"webhooks": {"allow": ["127.0.0.0/8"]}, "tools": {"mcp_call_timeout_seconds": 3.0}}
    with threaded(Path(tmp_path_factory.mktemp("responses-mcp")), config=config) as running:
        yield running


@pytest.fixture
def client(app: ThreadedApp) -> Iterator[OpenAI]:
    with OpenAI(base_url=openai_base(app.url), api_key=new_key(), max_retries=0) as made:
        yield made


def tool(mcp: RunningMcp, **extra: Any) -> dict[str, Any]:
    return {
        "type": "mcp",
        "server_label": "docs",
        "server_url": mcp.url,
        "authorization": TOKEN,
        "allowed_tools": ["echo"],
        "require_approval": "never",
        **extra,
    }


def test_an_mcp_tool_is_called_by_the_server(client: OpenAI, mcp: RunningMcp) -> None:
    before = len(mcp.record.calls)
    raw = client.responses.with_raw_response.create(model="echo", input="hello tools", tools=[tool(mcp)])  # type: ignore[list-item]
    body = json.loads(raw.http_response.content)
    response = raw.parse()
    assert response.status == "completed"
    output: list[ResponseOutputItem] = response.output
    assert [item.type for item in output] == ["mcp_call", "message"]
    call = body["output"][0]
    assert call["id"] == f"mcp_{response.id}_0"
    assert (call["server_label"], call["name"], call["status"]) == ("docs", "echo", "completed")
    assert "hello tools" in call["output"]
    assert "docs__echo" in response.output_text
    assert [made[0] for made in mcp.record.calls[before:]] == ["echo"]
    # the token is sent as the server's bearer token, and never shown
    assert any(f"Bearer {TOKEN}" in seen.get("authorization", "") for seen in mcp.record.headers_seen)
    shown = body["tools"][0]
    assert shown["headers"] == {"Authorization": HIDDEN_HEADER} and shown["require_approval"] == "never"
    # Open Responses' models know function tools and the items of a function-calling turn only: the rest
    # of the body is checked with the tool and its call left out
    valid(json.dumps({**body, "tools": [], "output": body["output"][1:]}))


def test_approvals_are_not_served(client: OpenAI, mcp: RunningMcp) -> None:
    with pytest.raises(BadRequestError) as caught:
        client.responses.create(model="echo", input="x", tools=[tool(mcp, require_approval="always")])  # type: ignore[list-item]
    assert caught.value.param == "tools[0].require_approval"
