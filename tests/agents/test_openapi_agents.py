"""The Agents resource in the OpenAPI document: every route the handlers serve, valid, and an agent as
answered matching its schema (issue 15)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs in the environment
from openapi_spec_validator import validate

from server.agents.wire import view
from server.api.openapi import build
from server.protocol.codec import convert, json_encoder
from server.protocol.tools import Tool
from server.store.agents import AgentRecord

VERTEX = "/{version}/projects/{project}/locations/{location}"


def _document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(build())
    return document


def test_every_agent_route_is_described() -> None:
    document = _document()
    validate(document)
    paths = document["paths"]
    for prefix, suffix in (("/{version}", ""), (VERTEX, "Vertex")):
        expected = {
            ("/agents", "post"): "CreateAgent",
            ("/agents", "get"): "ListAgents",
            ("/agents/{id}", "get"): "GetAgent",
            ("/agents/{id}", "delete"): "DeleteAgent",
        }
        for (path, method), name in expected.items():
            assert paths[prefix + path][method]["operationId"] == name + suffix
        assert "patch" not in paths[prefix + "/agents/{id}"]
    create = document["components"]["schemas"]["CreateAgent"]
    assert create["required"] == ["base_agent"]


def test_an_agent_as_answered_matches_its_schema() -> None:
    document = _document()
    tools = convert(
        [{"type": "function", "name": "f"}, {"type": "hologram", "beam": 3}, {"type": "google_search"}],
        list[Tool],
    )
    record = AgentRecord(
        id="ag_" + "A" * 22,
        create_ms=1,
        base_agent="echo",
        description="d",
        system_instruction="s",
        tools=tools,
        agent_config={"type": "antigravity"},
    )
    answered = json.loads(json_encoder.encode(view(record)))
    jsonschema.validate(
        answered, {"$ref": "#/components/schemas/Agent", "components": document["components"]}
    )
    listed = json.loads(json_encoder.encode({"agents": [view(record)], "next_page_token": "x"}))
    jsonschema.validate(
        listed, {"$ref": "#/components/schemas/AgentList", "components": document["components"]}
    )
