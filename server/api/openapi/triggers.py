"""The Triggers resource's paths and schemas (api/triggers.py), on Google's and Vertex's prefixes."""

from __future__ import annotations

import msgspec

from ...triggers.wire import CreateTrigger, Execution, ExecutionList, Trigger, TriggerList, UpdateTrigger
from .common import Json, ref, schema_hook
from .parameters import errors
from .resources import prefixed, query, reply

TAG = "Triggers"
TAG_VERTEX = "Triggers (Vertex paths)"
_NOT_FOUND = "No such trigger for this API key (or a malformed id), or an unknown API version"
_ID: Json = {
    "name": "id",
    "in": "path",
    "required": True,
    "description": "Trigger id: `tr_` and 22 characters",
    "schema": {"type": "string"},
}
_EMPTY: Json = {"type": "object", "maxProperties": 0}
_PAGE = [
    query("page_size", "At most this many (50 by default; more than 1000 is read as 1000)", "integer"),
    query("page_token", "`next_page_token` of the previous page"),
]


def _collection() -> dict[str, Json]:
    return {
        "create": {
            "operationId": "CreateTrigger",
            "summary": "Create a trigger: an interaction created on a cron schedule, in a time zone",
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": ref("CreateTrigger")}},
            },
            "responses": {
                "200": reply("The trigger, active (its MCP servers' header values hidden)", ref("Trigger")),
                **errors(
                    e400="Invalid request: the message names the field (`schedule`, `time_zone`, a field "
                    "inside `interaction`, a schedule closer than `[triggers] min_interval_seconds`)",
                    e404="An unknown API version",
                    e429="This API key has `[triggers] max_triggers` triggers (`RESOURCE_EXHAUSTED`)",
                ),
            },
        },
        "list": {
            "operationId": "ListTriggers",
            "summary": "List the triggers of this API key, oldest first",
            "parameters": [*_PAGE, query("filter", "`status = active` (or `paused`, `error`)")],
            "responses": {
                "200": reply("A page of triggers; `next_page_token` when there are more", ref("TriggerList")),
                **errors(e400="A bad `page_size`, `page_token` or `filter`", e404="An unknown API version"),
            },
        },
    }


def _item() -> dict[str, Json]:
    return {
        "get": {
            "operationId": "GetTrigger",
            "summary": "Get a trigger",
            "responses": {"200": reply("The trigger", ref("Trigger")), **errors(e404=_NOT_FOUND)},
        },
        "update": {
            "operationId": "UpdateTrigger",
            "summary": "Update a trigger's display_name or status (active, paused)",
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": ref("UpdateTrigger")}},
            },
            "parameters": [
                query("update_mask", "Comma-separated: display_name, status (without it, the fields sent)")
            ],
            "responses": {
                "200": reply("The trigger as updated", ref("Trigger")),
                **errors(e400="Invalid request: the message names the field or the mask", e404=_NOT_FOUND),
            },
        },
        "delete": {
            "operationId": "DeleteTrigger",
            "summary": "Delete a trigger and its executions (the interactions they made stay)",
            "responses": {"200": reply("Deleted", _EMPTY), **errors(e404=_NOT_FOUND)},
        },
        "run": {
            "operationId": "RunTrigger",
            "summary": "Run a trigger now: an execution, whatever its schedule and status",
            "responses": {"200": reply("The execution", ref("Execution")), **errors(e404=_NOT_FOUND)},
        },
        "executions": {
            "operationId": "ListTriggerExecutions",
            "summary": "List a trigger's executions, oldest first",
            "parameters": _PAGE,
            "responses": {
                "200": reply("A page of executions", ref("ExecutionList")),
                **errors(e400="A bad `page_size` or `page_token`", e404=_NOT_FOUND),
            },
        },
    }


def _operations() -> dict[str, Json]:
    return {**_collection(), **_item()}


def trigger_paths() -> Json:
    paths: Json = {}
    for prefix, base, ops in prefixed(_operations, (TAG, TAG_VERTEX)):
        item = [*base, _ID]
        paths[f"{prefix}/triggers"] = {"parameters": base, "post": ops["create"], "get": ops["list"]}
        paths[f"{prefix}/triggers/{{id}}"] = {
            "parameters": item,
            "get": ops["get"],
            "patch": ops["update"],
            "delete": ops["delete"],
        }
        paths[f"{prefix}/triggers/{{id}}/executions"] = {
            "parameters": item,
            "post": ops["run"],
            "get": ops["executions"],
        }
    return paths


def trigger_schemas() -> Json:
    _, components = msgspec.json.schema_components(
        [Trigger, TriggerList, CreateTrigger, UpdateTrigger, Execution, ExecutionList],
        schema_hook=schema_hook,
        ref_template="#/components/schemas/{name}",
    )
    create = components["CreateTrigger"]
    create["required"] = ["interaction", "schedule", "time_zone"]
    create["properties"]["interaction"] = {
        "type": "object",
        "description": "The create body each execution sends (checked at create as a create would be)",
    }
    create["properties"]["schedule"] = {"type": "string", "minLength": 1, "description": "A cron expression"}
    create["properties"]["time_zone"] = {"type": "string", "minLength": 1, "description": "An IANA zone"}
    create["properties"]["environment_id"] = {
        "description": "Not supported: only an empty value is accepted",
        "anyOf": [{"type": "null"}, {"type": "string", "maxLength": 0}],
    }
    components["Trigger"]["properties"]["interaction"] = {"type": "object"}
    components["UpdateTrigger"]["properties"]["status"] = {
        "anyOf": [{"type": "string", "enum": ["active", "paused"]}, {"type": "null"}]
    }
    return components
