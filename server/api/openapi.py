"""The OpenAPI document. Paths, parameters and responses are written here, next to what the handlers
read; the request and reply schemas are generated from the wire types, so the two cannot drift."""

from __future__ import annotations

import functools
import typing
from collections.abc import Sequence
from typing import Any

import msgspec
from litestar import Response, get

from ..protocol.base import OpenMember
from ..protocol.content import Content
from ..protocol.deltas import Delta
from ..protocol.events import AnyEvent
from ..protocol.interaction import CreateRequest, Interaction
from ..protocol.steps import Step
from ..protocol.tools import Tool
from .errors import ErrorBody

Json = dict[str, Any]

_OPEN_UNIONS: tuple[type[OpenMember], ...] = (Step, Content, Delta, Tool)
_SECURITY_SCHEMES: Json = {
    "ApiKeyHeader": {"type": "apiKey", "in": "header", "name": "x-goog-api-key"},
    "ApiKeyQuery": {"type": "apiKey", "in": "query", "name": "key"},
    "BearerToken": {
        "type": "http",
        "scheme": "bearer",
        "description": "The API key as a bearer token (what Vertex-style clients send)",
    },
}
_DESCRIPTION = """A self-hosted server for the Gemini Interactions API (the "steps" revision, 2026-05-20).

**Authentication.** Send the API key in the `x-goog-api-key` header, the `key` query parameter or
`Authorization: Bearer <key>` (checked in that order). In the default "open" mode any non-empty key is
accepted and each key is its own tenant; an interaction of another key answers 404.

**Errors** are `{"error": {"code": <HTTP status>, "message": ..., "status": ...}}`. The SDKs retry 408, 409,
429 and 5xx, so those are used only for failures a retry can fix.
"""


def _ref(name: str, kind: str = "schemas") -> Json:
    return {"$ref": f"#/components/{kind}/{name}"}


def _schema_hook(tp: type[Any]) -> Json:
    # an open union is one named component (built by _open_union), not a copy inlined at every use
    if isinstance(tp, type) and issubclass(tp, OpenMember):
        return _ref(tp.__name__)
    raise NotImplementedError


@functools.cache
def build() -> bytes:
    document = {
        "openapi": "3.1.0",
        "info": {
            "title": "Interactions API (self-hosted)",
            "version": "2026-05-20",
            "description": _DESCRIPTION,
        },
        "tags": [
            {"name": "Interactions"},
            {
                "name": "Interactions (Vertex paths)",
                "description": "The same operations under Vertex's prefix",
            },
            {"name": "Service", "description": "Probes and this documentation; no API key needed"},
        ],
        "security": [{name: []} for name in _SECURITY_SCHEMES],
        "paths": {**_interaction_paths(), **_service_paths()},
        "components": {
            "schemas": _schemas(),
            "headers": _HEADERS,
            "securitySchemes": _SECURITY_SCHEMES,
        },
    }
    return msgspec.json.encode(document)


@get(["/openapi.json", "/schema/openapi.json"])
async def document() -> Response[bytes]:
    return Response(content=build(), media_type="application/json")


# ---------------------------------------------------------------------------------------------------------
# Schemas


def _schemas() -> Json:
    members = [cls for union in _OPEN_UNIONS for cls in union.known.values()]
    schemas, components = msgspec.json.schema_components(
        [CreateRequest, Interaction, ErrorBody, AnyEvent, *members],
        ref_template="#/components/schemas/{name}",
        schema_hook=_schema_hook,
    )
    for union in _OPEN_UNIONS:
        components[union.__name__] = _open_union(union)
    components["Event"] = {
        **schemas[3],
        "title": "Event",
        "description": "One server-sent event; its `event_type` is also the SSE `event:` name",
    }
    components["Input"] = _INPUT
    components["Health"] = _HEALTH
    components["Readiness"] = _READINESS
    for schema in components.values():
        _drop_impossible_defaults(schema)
    create = components["CreateRequest"]
    create["description"] = (
        "The body of a create. Give exactly one of `model` and `agent`; `input` is required."
    )
    create["properties"]["input"] = _ref("Input")
    create["required"] = sorted({*create.get("required", ()), "input"})
    create["oneOf"] = _MODEL_OR_AGENT
    _describe_replies(components)
    return components


# service._route: exactly one of them, an empty or null one counting as not given
_MODEL_OR_AGENT = [
    {"required": [name], "properties": {name: {"type": "string", "minLength": 1}}}
    for name in ("model", "agent")
]


def _describe_replies(components: Json) -> None:
    """What the server always sends, marked required. The wire types leave these fields optional (they
    are optional in requests, or filled in by the server), and omit_defaults drops only a None."""
    interaction = components["Interaction"]
    interaction["properties"]["input"] = {
        **_ref("Input"),
        "description": "This turn's input as it was sent; returned by get with `include_input=true`",
    }
    # views.interaction and the streams' first snapshot set both times and the model or agent it ran on;
    # `id` is not always there: a `store: false` create has none
    interaction["required"] = sorted({*interaction["required"], "created", "updated"})
    interaction["oneOf"] = _MODEL_OR_AGENT
    interaction["properties"]["steps"] = {"type": "array", "items": _ref("ReplyStep")}
    components["StepStart"]["properties"]["step"] = _ref("ReplyStep")
    components["StoredInteraction"] = _STORED_INTERACTION
    components["ReplyStep"] = _REPLY_STEP
    components["ServerSentEvent"] = _server_sent_event()


_STORED_INTERACTION: Json = {
    "title": "StoredInteraction",
    "description": "An interaction read from the store (get, cancel): it always has its `id`, and its "
    "`steps` (the whole timeline, input steps first)",
    "allOf": [_ref("Interaction")],
    "required": ["id", "steps"],
}
# steps.py: `content` and `arguments` become [] and {} when a client leaves them out, so that strict
# clients always find them in what the server sends
_REPLY_STEP: Json = {
    "title": "ReplyStep",
    "description": "A step as the server sends it: every `user_input` and `model_output` step has its "
    "`content`, and every `function_call` its `arguments`",
    "allOf": [
        _ref("Step"),
        {
            "if": {"properties": {"type": {"enum": ["user_input", "model_output"]}}, "required": ["type"]},
            "then": {"required": ["content"]},
        },
        {
            "if": {"properties": {"type": {"const": "function_call"}}, "required": ["type"]},
            "then": {"required": ["arguments"]},
        },
    ],
}


def _server_sent_event() -> Json:
    """One event of a `text/event-stream` answer, as its SSE fields. OpenAPI 3.1 has no word for the
    items of a stream (3.2 adds `itemSchema`), and tools that check streams (schemathesis) read a stream's
    `schema` as one event's fields, as 3.2 does: so that is what it describes, the Event being `data`."""
    names = sorted(str(member.__struct_config__.tag) for member in typing.get_args(AnyEvent))
    return {
        "title": "ServerSentEvent",
        "description": "One event of a stream: an `event:` line with its `event_type` and a `data:` line "
        "with the Event as JSON. `: keep-alive` comment lines come between events while waiting.",
        "type": "object",
        "properties": {
            "event": {"enum": names, "description": "The `event_type` of its data"},
            "data": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": _ref("Event"),
            },
        },
        "required": ["event", "data"],
    }


def _open_union(union: type[OpenMember]) -> Json:
    """Known members by their `type`; any other `type` is accepted too and kept as sent."""
    mapping = {tag: f"#/components/schemas/{cls.__name__}" for tag, cls in union.known.items()}
    unknown = {
        "type": "object",
        "description": f"A {union.union_name} of another type: accepted, stored and returned as sent",
        "properties": {"type": {"type": "string"}},
        "required": ["type"],
    }
    return {
        "title": union.__name__,
        "anyOf": [*({"$ref": ref} for ref in mapping.values()), unknown],
        "discriminator": {"propertyName": "type", "mapping": mapping},
    }


def _admits_null(schema: Json) -> bool:
    if "$ref" in schema:
        return False  # every component is an object or a union of objects
    if not schema.keys() - {"title", "description", "default", "examples"}:
        return True  # `{}`: any JSON value
    kinds = schema.get("type")
    if kinds == "null" or (isinstance(kinds, list) and "null" in kinds):
        return True
    if "enum" in schema:
        return None in schema["enum"]
    return any(_admits_null(member) for member in [*schema.get("anyOf", ()), *schema.get("oneOf", ())])


def _drop_impossible_defaults(schema: Json) -> None:
    """msgspec writes `default: null` for every field that defaults to None. Where null is not a valid
    value (`content` of user_input and model_output steps: absent means empty, null is refused), the
    field is simply optional: say nothing rather than a default no client may send."""
    for prop in schema.get("properties", {}).values():
        if "default" in prop and prop["default"] is None and not _admits_null(prop):
            del prop["default"]


# Everything normalize_input() accepts (codec.py); an empty string or list is refused like a missing one.
_INPUT: Json = {
    "title": "Input",
    "description": "This turn's input. Strings and contents become one `user_input` step; steps are taken "
    "as they are (the stateless multi-turn form, or function results).",
    "anyOf": [
        {"type": "string", "minLength": 1, "description": "Text from the user"},
        {**_ref("Content"), "description": "One content block from the user"},
        {
            "type": "array",
            "minItems": 1,
            "items": _ref("Content"),
            "description": "Content blocks from the user",
        },
        {**_ref("Step"), "description": "One step"},
        {"type": "array", "minItems": 1, "items": _ref("Step"), "description": "Steps"},
    ],
}
_HEALTH: Json = {
    "title": "Health",
    "type": "object",
    "properties": {"status": {"const": "ok"}},
    "required": ["status"],
}
_READINESS: Json = {
    "title": "Readiness",
    "type": "object",
    "properties": {
        "status": {"type": "string", "description": "`ready`, or `not ready`"},
        "reason": {"type": "string", "description": "What is missing (only when not ready)"},
    },
    "required": ["status"],
    "examples": [{"status": "ready"}],
}


# ---------------------------------------------------------------------------------------------------------
# Parameters, headers, responses


def _path_param(name: str, description: str, pattern: str | None = None, example: str | None = None) -> Json:
    param: Json = {"name": name, "in": "path", "required": True, "description": description}
    param["schema"] = {"type": "string"} if pattern is None else {"type": "string", "pattern": pattern}
    if example is not None:
        param["example"] = example
    return param


def _flag(name: str, description: str) -> Json:
    # the server reads true/false/1/0 in any case (interactions._flag)
    return {"name": name, "in": "query", "description": description, "schema": {"type": "boolean"}}


# written out at each use: Swagger UI 5 does not resolve a path item's `$ref` parameters
_PARAMETERS: Json = {
    # interactions._VERSION: any other segment answers 404
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
_HEADERS: Json = {
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


def _errors(**statuses: str) -> Json:
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
            "content": {"application/json": {"schema": _ref("ErrorBody")}},
        }
    if "429" in responses:
        responses["429"]["headers"] = {"Retry-After": _ref("RetryAfter", "headers")}
    responses["503"]["headers"] = {"Retry-After": _ref("RetrySoon", "headers")}
    return responses


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
    schema = _ref("StoredInteraction" if stored else "Interaction")
    # an example, or Swagger UI makes one of every field's default: all nulls, which the server never sends
    content: Json = {"application/json": {"schema": schema, "example": _INTERACTION_EXAMPLE}}
    if stream:
        content["text/event-stream"] = {"schema": _ref("ServerSentEvent")}
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
        "parameters": [_PARAMETERS["IdempotencyKey"]],
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": _ref("CreateRequest"), "example": _CREATE_EXAMPLE}},
        },
        "responses": {
            "200": _reply(
                "The interaction: finished for a foreground call, `queued` for `background: true`; "
                "its events when the body has `stream: true`.",
                stream=True,
            ),
            **_errors(
                e400="Invalid request (the message names the field), an unknown model, a previous "
                "interaction still running, a conversation chain too long, or a request the upstream "
                "refused (`FAILED_PRECONDITION` when it refused this server's credentials)",
                e404="`previous_interaction_id` names no interaction of this API key, or an unknown API "
                "version",
                e408="The body did not arrive within `http.body_read_timeout_seconds`; the connection is "
                "closed",
                e413="The body is larger than `http.max_body_bytes`, or the upstream found it too large",
                e429="The upstream is rate limited (foreground calls)",
                e502="The upstream failed (foreground calls)",
                e504="The upstream timed out (foreground calls)",
            ),
        },
    }


def _get() -> Json:
    return {
        "summary": "Get an interaction, or stream its events",
        "parameters": [
            _PARAMETERS[name]
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
            **_errors(e400="A bad flag value, or a bad `last_event_id`", e404=_NOT_FOUND),
        },
    }


def _cancel() -> Json:
    return {
        "summary": "Cancel a queued or running interaction",
        "responses": {
            "200": _reply("The cancelled interaction, with any output made before the cancel", stored=True),
            **_errors(e400="The interaction has already finished", e404=_NOT_FOUND),
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
            **_errors(e404=_NOT_FOUND),
        },
    }


def _interaction_paths() -> Json:
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
        base = [_PARAMETERS[name] for name in names]
        item = [*base, _PARAMETERS["InteractionId"]]
        operations = _operations(suffix, tag, [_PARAMETERS[name]["name"] for name in names])
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


def _service_paths() -> Json:
    return {
        "/healthz": _open(
            "healthz", "Liveness: the process answers", {"200": _json_reply("Alive", _ref("Health"))}
        ),
        "/readyz": _open(
            "readyz",
            "Readiness: Redis answers and a worker consumes the background queue",
            {
                "200": _json_reply("Ready", _ref("Readiness")),
                "503": _json_reply("Not ready; `reason` says why", _ref("Readiness")),
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
