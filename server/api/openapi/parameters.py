"""The parameters, headers and responses the paths share."""

from __future__ import annotations

from .common import Json, ref

# ---------------------------------------------------------------------------------------------------------
# Parameters, headers, responses


def _path_param(name: str, description: str, pattern: str | None = None, example: str | None = None) -> Json:
    param: Json = {"name": name, "in": "path", "required": True, "description": description}
    param["schema"] = {"type": "string"} if pattern is None else {"type": "string", "pattern": pattern}
    if example is not None:
        param["example"] = example
    return param


def _flag(name: str, description: str) -> Json:
    # the server reads true/false/1/0 in any case (common.flag)
    return {"name": name, "in": "query", "description": description, "schema": {"type": "boolean"}}


# written out at each use: Swagger UI 5 does not resolve a path item's `$ref` parameters
PARAMETERS: Json = {
    # common._VERSION: any other segment answers 404
    "Version": _path_param("version", "API version", pattern=r"^v\d+((alpha|beta)\d*)?$", example="v1beta"),
    "Project": _path_param("project", "Vertex project: accepted and not used"),
    "Location": _path_param("location", "Vertex location: accepted and not used"),
    # interaction.is_interaction_id: anything else names no interaction (404)
    "InteractionId": _path_param("id", "Interaction id", pattern="^[A-Za-z0-9_-]{1,128}$"),
    "Stream": _flag(
        "stream",
        "Answer with the interaction's events (`text/event-stream`): replayed, then followed while it runs",
    ),
    "IncludeInput": _flag("include_input", "Also return the `input` this turn was created with"),
    "IncludeInputAlias": {**_flag("includeInput", "Vertex spelling of `include_input`"), "deprecated": True},
    "LastEventId": {
        "name": "last_event_id",
        "in": "query",
        "description": "With `stream=true` only: resume after this `event_id` (400 without `stream=true`, "
        "or for an id that is not in the interaction's log)",
        "schema": {"type": "string"},
        "example": "evt_12",
    },
    "LastEventIdAlias": {
        "name": "lastEventId",
        "in": "query",
        "description": "Vertex spelling of `last_event_id`",
        "deprecated": True,
        "schema": {"type": "string"},
    },
    "LastEventIdHeader": {
        "name": "Last-Event-ID",
        "in": "header",
        "description": "The SSE reconnect header: used with `stream=true` when no `last_event_id` is given",
        "schema": {"type": "string"},
    },
    "IdempotencyKey": {
        "name": "Idempotency-Key",
        "in": "header",
        "description": "A repeated create with the same key and body (per API key, within "
        "`store.idempotency_ttl_seconds`, default 24 h) answers with the interaction the first one "
        "created (for a foreground one, once it has finished); the same key with another body is a 400. "
        "Not used with `store: false`.",
        "schema": {"type": "string"},
    },
}
HEADERS: Json = {
    "RetryAfter": {
        "description": "Seconds to wait, when the upstream said",
        "schema": {"type": "integer", "minimum": 1},
    },
    "RetrySoon": {
        "description": "Seconds to wait before trying again",
        "required": True,
        "schema": {"type": "integer", "minimum": 1},
    },
}


def errors(**statuses: str) -> Json:
    """Error responses, keyed `e400=...`; every operation can also answer 401, 500 and 503."""
    described = {"e401": "No API key, or a key this server does not accept", **statuses}
    described.setdefault("e500", "An unexpected error in this server (logged)")
    # errors.handle: Redis not answering within store.redis_timeout_seconds, on any call
    described.setdefault("e503", "Redis is unavailable or not answering (`UNAVAILABLE`); try again soon")
    responses: Json = {}
    for key, text in sorted(described.items()):
        status = key.removeprefix("e")
        responses[status] = {
            "description": text,
            "content": {"application/json": {"schema": ref("ErrorBody")}},
        }
    if "429" in responses:
        responses["429"]["headers"] = {"Retry-After": ref("RetryAfter", "headers")}
    responses["503"]["headers"] = {"Retry-After": ref("RetrySoon", "headers")}
    return responses
