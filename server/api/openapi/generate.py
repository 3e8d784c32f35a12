"""Gemini's generateContent dialect's paths and schemas (api/generate.py), on Google's and Vertex's
prefixes: `:generateContent`, `:streamGenerateContent`, `:countTokens` of a model. The schemas are made
from the dialect's wire types (dialects/generate/wire.py), named `Gemini…` beside the Interactions API's."""

from __future__ import annotations

import msgspec

from ...dialects.generate import wire
from .common import Json, ref, schema_hook
from .parameters import errors
from .resources import prefixed, reply

TAG = "generateContent (Gemini's dialect)"
TAG_VERTEX = "generateContent (Vertex paths)"
_PREFIX = "Gemini"
_MODEL: Json = {
    "name": "model",
    "in": "path",
    "required": True,
    "description": "The model, as for an interaction (`echo`); `models/echo` is read as `echo`",
    "schema": {"type": "string", "pattern": "^[A-Za-z0-9._-]+$"},
    "example": "echo",
}
_ALT: Json = {
    "name": "alt",
    "in": "query",
    "description": "`sse`: the stream as SSE events; `json` (the default): one JSON array of the chunks. "
    "Any other value is a 400",
    "schema": {"type": "string", "enum": ["sse", "json"]},
}
_WARNINGS: Json = {
    "x-ix-warnings": {
        "description": "What the server could not apply (an unknown field, safety settings a backend has "
        "none of, a count that is an estimate), ` | ` between them; control characters escaped",
        "schema": {"type": "string"},
    }
}
_ERRORS = errors(
    e400="A bad body, a model that is not configured, or a bad `alt` (the message names the field)",
    e404="An unknown API version",
    e408="The body did not arrive in time",
    e413="The body is too large",
    e429="A limit of this API key, or the upstream's",
    e502="The backend failed before any output",
    e504="The backend did not answer in time",
)
_METHODS = (("generateContent", "generate"), ("streamGenerateContent", "stream"), ("countTokens", "count"))
_CHUNK = ref("GeminiGenerateContentResponse")
_BODY = "Field names in camelCase or snake_case; an unknown field is a warning (`x-ix-warnings`)"


def _body(name: str) -> Json:
    content = {"application/json": {"schema": ref(_PREFIX + name)}}
    return {"required": True, "description": _BODY, "content": content}


def _operations() -> dict[str, Json]:
    turn = reply("The turn's answer", _CHUNK)
    stream = reply(
        "The chunks: SSE events with `alt=sse`, else one JSON array written as they come",
        {"type": "array", "items": _CHUNK},
    )
    stream["content"]["text/event-stream"] = {"schema": ref("GeminiChunkEvent")}
    return {
        "generate": {
            "operationId": "GenerateContent",
            "summary": "One turn, stateless (a `store: false` interaction): Gemini's GenerateContentResponse",
            "parameters": [_ALT],
            "requestBody": _body("GenerateContentRequest"),
            "responses": {"200": {**turn, "headers": _WARNINGS}, **_ERRORS},
        },
        "stream": {
            "operationId": "StreamGenerateContent",
            "summary": "The same turn streamed, a GenerateContentResponse a chunk; a failure after the "
            "first chunk is a last chunk `{error}`",
            "parameters": [_ALT],
            "requestBody": _body("GenerateContentRequest"),
            "responses": {"200": {**stream, "headers": _WARNINGS}, **_ERRORS},
        },
        "count": {
            "operationId": "CountTokens",
            "summary": "The tokens of `contents` (or of a whole `generateContentRequest`): the backend's "
            "count, or this server's estimate (said in `x-ix-warnings`)",
            "parameters": [_ALT],
            "requestBody": _body("CountTokensRequest"),
            "responses": {
                "200": {**reply("The count", ref("GeminiCountTokensResponse")), "headers": _WARNINGS},
                **_ERRORS,
            },
        },
    }


def generate_paths() -> Json:
    paths: Json = {}
    for prefix, base, ops in prefixed(_operations, (TAG, TAG_VERTEX)):
        for method, key in _METHODS:
            paths[f"{prefix}/models/{{model}}:{method}"] = {"parameters": [*base, _MODEL], "post": ops[key]}
    return paths


def generate_schemas() -> Json:
    types = [
        wire.GenerateContentRequest,
        wire.GenerateContentResponse,
        wire.CountTokensRequest,
        wire.CountTokensResponse,
    ]
    _, components = msgspec.json.schema_components(
        types, schema_hook=schema_hook, ref_template="#/components/schemas/{name}"
    )
    # the wire types' names (Content, Tool, ...) are the Interactions API's too: each is prefixed
    text = msgspec.json.encode(components).replace(
        b"#/components/schemas/", f"#/components/schemas/{_PREFIX}".encode()
    )
    named: Json = {_PREFIX + name: schema for name, schema in msgspec.json.decode(text).items()}
    named["GeminiChunkEvent"] = {
        "title": "GeminiChunkEvent",
        "description": "One event of an `alt=sse` stream: a `data:` line with a chunk as JSON (no `event:` "
        "line, no `[DONE]`: the body ends)",
        "type": "object",
        "properties": {
            "data": {"type": "string", "contentMediaType": "application/json", "contentSchema": _CHUNK}
        },
        "required": ["data"],
    }
    return named
