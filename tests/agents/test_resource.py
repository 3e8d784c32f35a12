"""The Agents resource (issue 15), driven by the official SDK's `client.agents.*` against a server process."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from google import genai
from google.genai._gaos.lib.compat_errors import APIStatusError

from server.agents import rules

from ..support import Stack, new_key, sdk

#: the SDK warns once per process that its Agents are experimental
pytestmark = pytest.mark.filterwarnings("ignore:Agents usage is experimental:UserWarning")

WEATHER: dict[str, Any] = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def refused(call: Any, status: int, *words: str) -> dict[str, Any]:
    """The error body of a call that must fail with `status`, its message holding every one of `words`."""
    with pytest.raises(APIStatusError) as raised:
        call()
    assert raised.value.status_code == status, raised.value
    error: dict[str, Any] = raised.value.response.json()["error"]
    for word in words:
        assert word in error["message"], error
    return error


def test_create_get_list_delete(client: genai.Client) -> None:
    tools: list[Any] = [WEATHER, {"type": "google_search"}, {"type": "hologram", "beam": 3}]
    made = client.agents.create(
        base_agent="echo",
        description="answers about the weather",
        system_instruction="Be terse.",
        tools=tools,
        agent_config={"type": "antigravity", "max_total_tokens": 1000},
    )
    assert made.id and made.id.startswith("ag_") and len(made.id) == 25
    assert (made.base_agent, made.description, made.system_instruction) == (
        "echo",
        "answers about the weather",
        "Be terse.",
    )
    assert made.agent_config is not None and made.agent_config.max_total_tokens == 1000
    got = client.agents.get(made.id)
    assert got.model_dump(exclude_none=True) == made.model_dump(exclude_none=True)
    dumped = got.model_dump(exclude_none=True)
    # an unknown tool type is kept as sent
    assert dumped["tools"][2] == {"type": "hologram", "beam": 3}
    assert dumped["tools"][0]["name"] == "get_weather"
    assert [each.id for each in client.agents.list().agents or []] == [made.id]
    client.agents.delete(made.id)
    refused(lambda: client.agents.get(str(made.id)), 404, "was not found")
    refused(lambda: client.agents.delete(str(made.id)), 404, "was not found")
    assert not client.agents.list().agents


def test_a_chosen_id(client: genai.Client) -> None:
    made = client.agents.create(id="customer-sentinel", base_agent="echo")
    assert made.id == "customer-sentinel"
    assert client.agents.get("customer-sentinel").base_agent == "echo"
    refused(lambda: client.agents.create(id="customer-sentinel", base_agent="echo"), 400, "`id`", "exists")
    refused(lambda: client.agents.create(id="Not_Valid", base_agent="echo"), 400, "`id`")
    refused(lambda: client.agents.create(id="echo", base_agent="echo"), 400, "`id`", "configured")
    refused(lambda: client.agents.create(id="house-agent", base_agent="echo"), 400, "`id`")


def test_bad_fields_are_named(client: genai.Client, http: httpx.Client) -> None:
    refused(lambda: client.agents.create(system_instruction="x"), 400, "`base_agent`")
    refused(lambda: client.agents.create(base_agent="no-such-model"), 400, "`base_agent`", "echo")
    refused(
        lambda: client.agents.create(base_agent="echo", base_environment="remote-sandbox"),
        400,
        "`base_environment`",
        "not supported",
    )
    refused(
        lambda: client.agents.create(base_agent="echo", base_environment={"type": "remote", "sources": []}),
        400,
        "`base_environment`",
    )
    for body, field in (
        ({"base_agent": "echo", "tools": [{"name": "x"}]}, "tools[0]"),
        ({"base_agent": "echo", "system_instruction": 3}, "system_instruction"),
        ({"base_agent": "echo", "colour": "red"}, "colour"),
        ({"base_agent": "echo", "description": "x" * 5000}, "description"),
    ):
        error = http.post("/v1beta/agents", json=body).json()["error"]
        assert error["code"] == 400 and f"`{field}" in error["message"], (body, error)
    assert not client.agents.list().agents
    # an empty base_environment is accepted
    assert client.agents.create(base_agent="echo", base_environment="").id


def test_not_found(client: genai.Client, http: httpx.Client) -> None:
    for missing in ("ag_" + "A" * 22, "nobody-here", "bad id!", "v1_abc"):
        response = http.get(f"/v1beta/agents/{missing}")
        assert response.status_code == 404, (missing, response.text)
        assert response.json()["error"]["status"] == "NOT_FOUND"
        assert http.delete(f"/v1beta/agents/{missing}").status_code == 404
    assert http.get("/v9zz/agents").status_code == 404
    assert http.patch("/v1beta/agents/ag_x", json={}).status_code == 405


def test_tenants_do_not_see_each_other(stack: Stack, client: genai.Client) -> None:
    mine = client.agents.create(id="shared-name", base_agent="echo")
    other = sdk(stack.url, new_key())
    assert not other.agents.list().agents
    refused(lambda: other.agents.get(str(mine.id)), 404)
    refused(lambda: other.agents.delete(str(mine.id)), 404)
    # the same chosen id is another tenant's own
    assert other.agents.create(id="shared-name", base_agent="echo-slow").base_agent == "echo-slow"
    assert client.agents.get("shared-name").base_agent == "echo"


def test_paging_and_vertex_paths(client: genai.Client, http: httpx.Client) -> None:
    made = [str(client.agents.create(base_agent="echo", description=f"n{i}").id) for i in range(5)]
    seen: list[str] = []
    token: str | None = None
    for _ in range(5):
        page = client.agents.list(page_size=2, page_token=token)
        seen += [str(each.id) for each in page.agents or []]
        token = page.next_page_token
        if token is None:
            break
    assert seen == made
    for bad in ({"page_size": "-1"}, {"page_size": "two"}, {"page_token": "nonsense"}):
        error = http.get("/v1beta/agents", params=bad).json()["error"]
        assert error["code"] == 400 and f"`{next(iter(bad))}`" in error["message"]
    vertex = http.get("/v1beta1/projects/p/locations/us-central1/agents").json()
    assert [each["id"] for each in vertex["agents"]] == made
    assert http.get(f"/v1/agents/{made[0]}").json()["id"] == made[0]


def test_the_limit(client: genai.Client, http: httpx.Client) -> None:
    for index in range(rules.MAX_AGENTS):
        response = http.post("/v1beta/agents", json={"base_agent": "echo", "id": f"a{index}"})
        assert response.status_code == 200, response.text
    refused(lambda: client.agents.create(base_agent="echo"), 429, str(rules.MAX_AGENTS), "delete one")
    client.agents.delete("a0")
    assert client.agents.create(base_agent="echo").id


def test_mcp_headers_are_hidden(client: genai.Client, http: httpx.Client) -> None:
    server = {"type": "mcp_server", "name": "files", "url": "https://93.184.216.34/mcp"}
    made = http.post(
        "/v1beta/agents",
        json={"base_agent": "echo", "tools": [{**server, "headers": {"Authorization": "Bearer s3cret"}}]},
    ).json()
    assert made["tools"] == [{**server, "headers": {"Authorization": "(hidden)"}}]
    got = http.get(f"/v1beta/agents/{made['id']}").text
    listed = http.get("/v1beta/agents").text
    assert "s3cret" not in got and "s3cret" not in listed
