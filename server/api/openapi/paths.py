"""The paths: each operation as the handlers serve it."""

from __future__ import annotations

from collections.abc import Sequence

from ...observability import export
from .common import Json, ref
from .parameters import PARAMETERS, errors

# ---------------------------------------------------------------------------------------------------------
# Paths

_NOT_FOUND = "No such interaction for this API key, or an unknown API version"
_STREAM_NOTE = (
    " With streaming, `text/event-stream`: each event is an `event: <event_type>` line and a `data:` line "
    "holding one Event as JSON, `: keep-alive` comments while waiting; the stream ends after "
    "`interaction.completed` or `error`, and a failure after the stream began is an `error` event."
)


_CREATE_EXAMPLE: Json = {"model": "echo", "input": "Hello there"}
_INTERACTION_EXAMPLE: Json = {
    "model": "echo",
    "id": "v1_RF3XjdbGNyJaWScrNOcLvw",
    "object": "interaction",
    "status": "completed",
    "created": "2026-05-20T12:00:00Z",
    "updated": "2026-05-20T12:00:01Z",
    "steps": [{"type": "model_output", "content": [{"type": "text", "text": "Hello there"}]}],
    "usage": {"total_input_tokens": 2, "total_output_tokens": 2, "total_tokens": 4},
}


def _reply(description: str, *, stream: bool = False, stored: bool = False) -> Json:
    schema = ref("StoredInteraction" if stored else "Interaction")
    # an example, or Swagger UI makes one of every field's default: all nulls, which the server never sends
    content: Json = {"application/json": {"schema": schema, "example": _INTERACTION_EXAMPLE}}
    if stream:
        content["text/event-stream"] = {"schema": ref("ServerSentEvent")}
        description += _STREAM_NOTE
    return {"description": description, "content": content}


_OPERATION_IDS = {
    "create": "CreateInteraction",
    "get": "getInteractionById",
    "cancel": "cancelInteractionById",
    "delete": "deleteInteraction",
}


def _operations(suffix: str, tag: str, path_params: Sequence[str]) -> dict[str, Json]:
    """The four operations of one path prefix; `suffix` keeps their operationIds unique."""
    made = {"create": _create(), "get": _get(), "cancel": _cancel(), "delete": _delete()}
    made["create"]["responses"]["200"]["links"] = _links(suffix, path_params)
    return {
        key: {"operationId": _OPERATION_IDS[key] + suffix, "tags": [tag], **op} for key, op in made.items()
    }


def _links(suffix: str, path_params: Sequence[str]) -> Json:
    """What can be done next with the interaction a create answered with, on the same path prefix
    (schemathesis's stateful phase follows these)."""
    parameters = {name: f"$request.path.{name}" for name in path_params}
    parameters["id"] = "$response.body#/id"
    return {
        f"{key}Interaction": {
            "operationId": _OPERATION_IDS[key] + suffix,
            "parameters": parameters,
            "description": f"The `{key}` of this interaction (not after `store: false`: it has no id)",
        }
        for key in ("get", "cancel", "delete")
    }


def _create() -> Json:
    return {
        "summary": "Create an interaction (run a model turn)",
        "parameters": [PARAMETERS["IdempotencyKey"]],
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": ref("CreateRequest"), "example": _CREATE_EXAMPLE}},
        },
        "responses": {
            "200": _reply(
                "The interaction: finished for a foreground call, `in_progress` for `background: true` (also "
                "while no worker has taken it yet, as Google's API answers); "
                "its events when the body has `stream: true`.",
                stream=True,
            ),
            **errors(
                e400="Invalid request (the message names the field), an unknown model, a previous "
                "interaction still running, a conversation chain too long, or a request the upstream "
                "refused (`FAILED_PRECONDITION` when it refused this server's credentials)",
                e404="`previous_interaction_id` names no interaction of this API key, or an unknown API "
                "version",
                e408="The body did not arrive within `http.body_read_timeout_seconds`; the connection is "
                "closed",
                e413="The body is larger than `http.max_body_bytes`, or the upstream found it too large",
                e429="A limit of this API key is reached (`[auth.limits]`: the details name it, with "
                "`RetryInfo`), or the upstream is rate limited (foreground calls)",
                e502="The upstream failed (foreground calls)",
                e504="The upstream timed out (foreground calls)",
            ),
        },
    }


def _get() -> Json:
    return {
        "summary": "Get an interaction, or stream its events",
        "parameters": [
            PARAMETERS[name]
            for name in (
                "Stream",
                "LastEventId",
                "LastEventIdHeader",
                "IncludeInput",
                "LastEventIdAlias",
                "IncludeInputAlias",
            )
        ],
        "responses": {
            "200": _reply(
                "The interaction with its whole timeline; its events with `stream=true`.",
                stream=True,
                stored=True,
            ),
            **errors(e400="A bad flag value, or a bad `last_event_id`", e404=_NOT_FOUND),
        },
    }


def _cancel() -> Json:
    return {
        "summary": "Cancel a queued or running interaction",
        "responses": {
            "200": _reply("The cancelled interaction, with any output made before the cancel", stored=True),
            **errors(e400="The interaction has already finished", e404=_NOT_FOUND),
        },
    }


def _delete() -> Json:
    return {
        "summary": "Delete an interaction (a running one is cancelled first)",
        "responses": {
            "200": {
                "description": "Deleted",
                "content": {"application/json": {"schema": {"type": "object", "maxProperties": 0}}},
            },
            **errors(e404=_NOT_FOUND),
        },
    }


def interaction_paths() -> Json:
    """Google's paths, and Vertex's with `projects/{project}/locations/{location}` (interactions.py)."""
    paths: Json = {}
    prefixes = (
        ("/{version}", ["Version"], "", "Interactions"),
        (
            "/{version}/projects/{project}/locations/{location}",
            ["Version", "Project", "Location"],
            "Vertex",
            "Interactions (Vertex paths)",
        ),
    )
    for prefix, names, suffix, tag in prefixes:
        base = [PARAMETERS[name] for name in names]
        item = [*base, PARAMETERS["InteractionId"]]
        operations = _operations(suffix, tag, [PARAMETERS[name]["name"] for name in names])
        paths[f"{prefix}/interactions"] = {"parameters": base, "post": operations["create"]}
        paths[f"{prefix}/interactions/{{id}}"] = {
            "parameters": item,
            "get": operations["get"],
            "delete": operations["delete"],
        }
        paths[f"{prefix}/interactions/{{id}}/cancel"] = {"parameters": item, "post": operations["cancel"]}
    return paths


def _open(operation_id: str, summary: str, responses: Json) -> Json:
    return {
        "get": {
            "operationId": operation_id,
            "summary": summary,
            "tags": ["Service"],
            "security": [],
            "responses": responses,
        }
    }


def _json_reply(description: str, schema: Json) -> Json:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def metrics_path() -> Json:
    """`GET /metrics`, in the document only when this server answers it on the API's port (metrics on,
    no `[metrics] port` of their own): the document describes what this port serves."""
    scrape = {
        "description": "Prometheus text exposition format 0.0.4: the ix_* metrics of every process of this "
        "server, added up (another process's values are at most a second old)",
        "content": {export.CONTENT_TYPE: {"schema": {"type": "string"}}},
    }
    return {
        "/metrics": _open("metrics", "The Prometheus scrape (no API key, as for the probes)", {"200": scrape})
    }


def service_paths() -> Json:
    return {
        "/healthz": _open(
            "healthz", "Liveness: the process answers", {"200": _json_reply("Alive", ref("Health"))}
        ),
        "/readyz": _open(
            "readyz",
            "Readiness: Redis answers and a worker consumes the background queue",
            {
                "200": _json_reply("Ready", ref("Readiness")),
                "503": _json_reply("Not ready; `reason` says why", ref("Readiness")),
            },
        ),
        "/openapi.json": _open(
            "openapi",
            "This document (also at /schema/openapi.json)",
            {"200": _json_reply("The OpenAPI document", {"type": "object"})},
        ),
        "/docs": _open(
            "docs",
            "This document, readable (Swagger UI, served by this server: works offline)",
            {
                "200": {
                    "description": "An HTML page",
                    "content": {"text/html": {"schema": {"type": "string"}}},
                }
            },
        ),
    }
