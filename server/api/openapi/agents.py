"""The Agents resource's paths and schemas (api/agents.py), on Google's and Vertex's prefixes."""

from __future__ import annotations

import msgspec

from ...agents.wire import Agent, AgentList, CreateAgent
from .common import Json, ref, schema_hook
from .parameters import errors
from .resources import prefixed, query, reply

TAG = "Agents"
TAG_VERTEX = "Agents (Vertex paths)"
_NOT_FOUND = "No such agent for this API key (or a malformed id), or an unknown API version"
_ID: Json = {
    "name": "id",
    "in": "path",
    "required": True,
    "description": "Agent id: `ag_` and 22 characters (made by the server), or the id chosen at create",
    "schema": {"type": "string"},
}
_EMPTY: Json = {"type": "object", "maxProperties": 0}


def _operations() -> dict[str, Json]:
    page_size = query(
        "page_size", "At most this many (50 by default; more than 1000 is read as 1000)", "integer"
    )
    return {
        "create": {
            "operationId": "CreateAgent",
            "summary": "Create an agent: a base model, a system instruction, tools and an agent_config",
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": ref("CreateAgent")}},
            },
            "responses": {
                "200": reply("The agent (its MCP servers' header values hidden)", ref("Agent")),
                **errors(
                    e400="Invalid request: the message names the field (an unknown `base_agent`, a taken or "
                    "malformed `id`, a `base_environment`)",
                    e404="An unknown API version",
                    e429="This API key has `[agents] max_agents` agents (`RESOURCE_EXHAUSTED`)",
                ),
            },
        },
        "list": {
            "operationId": "ListAgents",
            "summary": "List the agents of this API key, oldest first",
            "parameters": [page_size, query("page_token", "`next_page_token` of the previous page")],
            "responses": {
                "200": reply("A page of agents; `next_page_token` when there are more", ref("AgentList")),
                **errors(e400="A bad `page_size` or `page_token`", e404="An unknown API version"),
            },
        },
        "get": {
            "operationId": "GetAgent",
            "summary": "Get an agent",
            "responses": {"200": reply("The agent", ref("Agent")), **errors(e404=_NOT_FOUND)},
        },
        "delete": {
            "operationId": "DeleteAgent",
            "summary": "Delete an agent (interactions that ran it keep their config)",
            "responses": {"200": reply("Deleted", _EMPTY), **errors(e404=_NOT_FOUND)},
        },
    }


def agent_paths() -> Json:
    paths: Json = {}
    for prefix, base, ops in prefixed(_operations, (TAG, TAG_VERTEX)):
        paths[f"{prefix}/agents"] = {"parameters": base, "post": ops["create"], "get": ops["list"]}
        paths[f"{prefix}/agents/{{id}}"] = {
            "parameters": [*base, _ID],
            "get": ops["get"],
            "delete": ops["delete"],
        }
    return paths


def agent_schemas() -> Json:
    _, components = msgspec.json.schema_components(
        [Agent, AgentList, CreateAgent], schema_hook=schema_hook, ref_template="#/components/schemas/{name}"
    )
    create = components["CreateAgent"]
    create["required"] = ["base_agent"]
    create["properties"]["base_agent"] = {
        "type": "string",
        "minLength": 1,
        "description": "A configured model or agent name (config/models.toml, or a built-in one)",
    }
    create["properties"]["id"] = {
        "type": "string",
        "pattern": "^[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$",
        "description": "The id to give it (not a configured model or agent name); left out: `ag_` and 22 "
        "characters",
    }
    create["properties"]["base_environment"] = {
        "description": "Not supported: only an empty value is accepted",
        "anyOf": [
            {"type": "null"},
            {"type": "string", "maxLength": 0},
            {"type": "object", "maxProperties": 0},
        ],
    }
    return components
