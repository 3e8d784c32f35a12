"""The OpenAPI document, with the request and reply schemas generated from the wire types."""

from __future__ import annotations

import functools
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

_REF = "#/components/schemas/{name}"
_OPEN_UNIONS: tuple[type[OpenMember], ...] = (Step, Content, Delta, Tool)


def _schema_hook(tp: type[Any]) -> dict[str, Any]:
    if isinstance(tp, type) and issubclass(tp, OpenMember):
        members = [{"$ref": _REF.format(name=cls.__name__)} for cls in tp.known.values()]
        unknown = {"type": "object", "description": f"A {tp.union_name} of another type, kept as sent"}
        return {"anyOf": [*members, unknown], "discriminator": {"propertyName": "type"}}
    raise NotImplementedError


@functools.cache
def build() -> bytes:
    members = [cls for union in _OPEN_UNIONS for cls in union.known.values()]
    schemas, components = msgspec.json.schema_components(
        [CreateRequest, Interaction, ErrorBody, AnyEvent, *members],
        ref_template=_REF,
        schema_hook=_schema_hook,
    )
    create, interaction, error, event = schemas[:4]
    json_reply = {"200": {"content": {"application/json": {"schema": interaction}}}}
    errors = {"4XX": {"description": "Error", "content": {"application/json": {"schema": error}}}}
    stream = {"text/event-stream": {"schema": event}}
    item_params = [
        {
            "name": "version",
            "in": "path",
            "required": True,
            "schema": {"type": "string", "example": "v1beta"},
        },
        {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
    ]
    document = {
        "openapi": "3.1.0",
        "info": {"title": "Interactions API (self-hosted)", "version": "2026-05-20"},
        "paths": {
            "/{version}/interactions": {
                "post": {
                    "operationId": "CreateInteraction",
                    "parameters": item_params[:1],
                    "requestBody": {"required": True, "content": {"application/json": {"schema": create}}},
                    "responses": {
                        "200": {"content": {"application/json": {"schema": interaction}, **stream}},
                        **errors,
                    },
                }
            },
            "/{version}/interactions/{id}": {
                "get": {
                    "operationId": "getInteractionById",
                    "parameters": [
                        *item_params,
                        {"name": "stream", "in": "query", "schema": {"type": "boolean"}},
                        {"name": "include_input", "in": "query", "schema": {"type": "boolean"}},
                        {"name": "last_event_id", "in": "query", "schema": {"type": "string"}},
                    ],
                    "responses": {
                        "200": {"content": {"application/json": {"schema": interaction}, **stream}},
                        **errors,
                    },
                },
                "delete": {
                    "operationId": "deleteInteraction",
                    "parameters": item_params,
                    "responses": {
                        "200": {"content": {"application/json": {"schema": {"type": "object"}}}},
                        **errors,
                    },
                },
            },
            "/{version}/interactions/{id}/cancel": {
                "post": {
                    "operationId": "cancelInteractionById",
                    "parameters": item_params,
                    "responses": {**json_reply, **errors},
                }
            },
        },
        "components": {"schemas": components},
    }
    return msgspec.json.encode(document)


@get(["/openapi.json", "/schema/openapi.json"])
async def document() -> Response[bytes]:
    return Response(content=build(), media_type="application/json")
