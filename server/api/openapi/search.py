"""Finding stored interactions (api/search.py, our extension): the list, the purge and its operation, on
Google's and Vertex's prefixes."""

from __future__ import annotations

import msgspec

from ...protocol import status as st
from ...search.deleting import Operation, PurgeCount, PurgeRequest
from ...search.filters import STATUS_PATTERN, Filter
from ...search.listing import MAX_PAGE_SIZE
from .common import Json, ref, schema_hook
from .parameters import errors
from .resources import prefixed, query, reply

TAG = "Search (this server's extension)"
TAG_VERTEX = "Search (Vertex paths)"
_GIVEN: Json = {"type": "string", "minLength": 1}
_MOMENT: Json = {"type": "string", "format": "date-time"}
#: a purge's filter must narrow the match: an empty one would delete everything
_NARROWING: list[Json] = [
    {"required": ["labels"], "properties": {"labels": {"minProperties": 1}}},
    *({"required": [name]} for name in ("status", "model", "agent", "created_after", "created_before")),
    {"required": ["roots_only"], "properties": {"roots_only": {"const": True}}},
]
_BAD = "A parameter that is not a filter, or a bad value of one (the message names it)"


def _list_parameters() -> list[Json]:
    statuses = ", ".join(sorted(st.SHOWN))
    return [
        {
            "name": "labels",
            "in": "query",
            "description": "`labels.<key>=<value>` (or `labels[<key>]=<value>`): interactions with this "
            "label (several: all of them)",
            "style": "deepObject",
            "schema": {
                "type": "object",
                "propertyNames": {"minLength": 1},
                "additionalProperties": {"type": "string"},
            },
        },
        {
            **query(
                "status",
                f"One of these statuses, comma-separated ({statuses}), as the interactions show them: "
                "`in_progress` includes background runs no worker has taken yet, `cancelled` a cancel "
                "still saving its output",
            ),
            "schema": {"type": "string", "pattern": STATUS_PATTERN},
        },
        {**query("model", "Created with this model (with or without `models/`)"), "schema": _GIVEN},
        {**query("agent", "Created through this agent"), "schema": _GIVEN},
        {**query("created_after", "RFC 3339: created at or after it"), "schema": _MOMENT},
        {**query("created_before", "RFC 3339: created before it"), "schema": _MOMENT},
        query("roots_only", "Only the first turn of each conversation", "boolean"),
        query("include_steps", "Each interaction with its steps, as get shows them", "boolean"),
        query(
            "page_size",
            f"At most this many (20 by default; more than {MAX_PAGE_SIZE} is read as it)",
            "integer",
        ),
        query("page_token", "`next_page_token` of the previous page"),
    ]


def _operations() -> dict[str, Json]:
    return {
        "list": {
            "operationId": "ListInteractions",
            "summary": "The API key's stored interactions, newest first, that match every filter given. A "
            "page reads a bounded number of interactions: a sparse filter's page may be short, even empty, "
            "and still have a next_page_token",
            "parameters": _list_parameters(),
            "responses": {
                "200": reply("A page", ref("InteractionList")),
                **errors(e400=_BAD, e404="An unknown API version"),
            },
        },
        "purge": {
            "operationId": "PurgeInteractions",
            "summary": "Delete every interaction a filter matches, each with the rest of its conversation. "
            "Without `force`, count what would go; with it, start an operation that deletes",
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": ref("PurgeRequest")}},
            },
            "responses": {
                "200": reply(
                    "The count (no `force`), or the operation started",
                    {"oneOf": [ref("PurgeCount"), ref("Operation")]},
                ),
                **errors(
                    e400="An empty filter, or a bad field (the message names it)",
                    e404="An unknown API version",
                ),
            },
        },
        "operation": {
            "operationId": "GetOperation",
            "summary": "A purge's progress (kept a day after its last change)",
            "responses": {
                "200": reply(
                    "The operation; `done` with `response.purge_count` at the end", ref("Operation")
                ),
                **errors(e404="No such operation of this API key"),
            },
        },
    }


_OPERATION_ID: Json = {
    "name": "operation",
    "in": "path",
    "required": True,
    "description": "The id of `operations/<id>`",
    "schema": {"type": "string"},
}


def search_paths() -> Json:
    """The list's GET joins the create's path item (paths.py); the rest are paths of their own."""
    paths: Json = {}
    for prefix, base, ops in prefixed(_operations, (TAG, TAG_VERTEX)):
        paths[f"{prefix}/interactions"] = {"get": ops["list"]}
        paths[f"{prefix}/interactions:purge"] = {"parameters": base, "post": ops["purge"]}
        paths[f"{prefix}/operations/{{operation}}"] = {
            "parameters": [*base, _OPERATION_ID],
            "get": ops["operation"],
        }
    return paths


def search_schemas() -> Json:
    _, components = msgspec.json.schema_components(
        [PurgeRequest, Filter, PurgeCount, Operation],
        schema_hook=schema_hook,
        ref_template="#/components/schemas/{name}",
    )
    components["PurgeRequest"]["required"] = ["filter"]
    components["Filter"]["anyOf"] = _NARROWING
    components["InteractionList"] = {
        "type": "object",
        "required": ["interactions"],
        "properties": {
            "interactions": {"type": "array", "items": ref("Interaction")},
            "next_page_token": {"type": "string", "description": "Left out on the last page"},
        },
    }
    return components
