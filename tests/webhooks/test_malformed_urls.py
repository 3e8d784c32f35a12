"""A malformed URL (`http://[::1/`, a port out of range, no host...) in any field that takes one is a 400
naming that field, never a 500: a webhook's `uri` (create and update), `webhook_config.uris[i]`, an
`mcp_server` tool's `url` in a create and in an agent. On the shared in-process server (its address rules
strict: nothing allowed)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

#: a public address literal: accepted without DNS, never called by these tests
PUBLIC = "https://93.184.216.34/hook"
MALFORMED = [
    "http://[::1/",
    "http://[::1",
    "http://[zz]/",
    "http://host:99999/",
    "http://:80/",
    "http://h:8a/",
]
EVENTS = ["interaction.completed"]


def mcp(url: str) -> dict[str, Any]:
    return {"type": "mcp_server", "name": "files", "url": url}


def refused(response: httpx.Response, field: str) -> None:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["status"] == "INVALID_ARGUMENT" and f"`{field}`" in error["message"], error


@pytest.mark.parametrize("url", MALFORMED)
def test_a_malformed_url_is_a_400_naming_its_field_wherever_it_is(http: httpx.Client, url: str) -> None:
    refused(http.post("/v1beta/webhooks", json={"uri": url, "subscribed_events": EVENTS}), "uri")
    made = http.post("/v1beta/webhooks", json={"uri": PUBLIC, "subscribed_events": EVENTS})
    assert made.status_code == 200, made.text
    path = f"/v1beta/webhooks/{made.json()['id']}"
    refused(http.patch(path, params={"update_mask": "uri"}, json={"uri": url}), "uri")
    assert http.get(path).json()["uri"] == PUBLIC
    config = {"uris": [PUBLIC, url]}
    create = {"model": "echo", "input": "hi"}
    refused(
        http.post("/v1beta/interactions", json={**create, "webhook_config": config}), "webhook_config.uris[1]"
    )
    refused(http.post("/v1beta/interactions", json={**create, "tools": [mcp(url)]}), "tools[0].url")
    agent = {"base_agent": "echo", "tools": [{"type": "function", "name": "f"}, mcp(url)]}
    refused(http.post("/v1beta/agents", json=agent), "tools[1].url")
    assert http.get("/v1beta/agents").json().get("agents", []) == []
