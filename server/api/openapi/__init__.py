"""The OpenAPI document. Paths, parameters and responses are written out (paths.py, parameters.py), next
to what the handlers read; the request and reply schemas are generated from the wire types (schemas.py), so
the two cannot drift."""

from __future__ import annotations

import functools
from typing import Any

import msgspec
from litestar import Request, Response, get

from ..metrics import on_api_port
from .agents import TAG as AGENTS_TAG
from .agents import TAG_VERTEX as AGENTS_TAG_VERTEX
from .agents import agent_paths, agent_schemas
from .common import Json
from .generate import TAG as GENERATE_TAG
from .generate import TAG_VERTEX as GENERATE_TAG_VERTEX
from .generate import generate_paths, generate_schemas
from .models import TAG as MODELS_TAG
from .models import TAG_VERTEX as MODELS_TAG_VERTEX
from .models import model_paths, model_schemas
from .parameters import HEADERS
from .paths import interaction_paths, metrics_path, service_paths
from .schemas import schemas
from .search import TAG as SEARCH_TAG
from .search import TAG_VERTEX as SEARCH_TAG_VERTEX
from .search import search_paths, search_schemas
from .triggers import TAG as TRIGGERS_TAG
from .triggers import TAG_VERTEX as TRIGGERS_TAG_VERTEX
from .triggers import trigger_paths, trigger_schemas
from .usage import TAG as USAGE_TAG
from .usage import TAG_VERTEX as USAGE_TAG_VERTEX
from .usage import usage_paths, usage_schemas
from .webhooks import TAG, TAG_VERTEX, webhook_paths, webhook_schemas

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


#: the document's tags, in the order its readers see the resources
_TAGS: list[Json] = [
    {"name": "Interactions"},
    {
        "name": "Interactions (Vertex paths)",
        "description": "The same operations under Vertex's prefix",
    },
    {"name": TAG, "description": "The Webhooks resource of this API key"},
    {"name": TAG_VERTEX, "description": "The same operations under Vertex's prefix"},
    {"name": AGENTS_TAG, "description": "The Agents resource of this API key"},
    {"name": AGENTS_TAG_VERTEX, "description": "The same operations under Vertex's prefix"},
    {
        "name": TRIGGERS_TAG,
        "description": "The Triggers resource of this API key: scheduled interactions",
    },
    {"name": TRIGGERS_TAG_VERTEX, "description": "The same operations under Vertex's prefix"},
    {"name": MODELS_TAG, "description": "The models this server serves (the same for every API key)"},
    {"name": MODELS_TAG_VERTEX, "description": "The same operations under Vertex's prefix"},
    {
        "name": GENERATE_TAG,
        "description": "Gemini's generateContent on every model: stateless turns, nothing stored",
    },
    {"name": GENERATE_TAG_VERTEX, "description": "The same operations under Vertex's prefix"},
    {
        "name": SEARCH_TAG,
        "description": "Lists of this API key's stored interactions, and deletes by filter: not in "
        "Google's API",
    },
    {"name": SEARCH_TAG_VERTEX, "description": "The same operations under Vertex's prefix"},
    {"name": USAGE_TAG, "description": "What this API key's interactions used: not in Google's API"},
    {"name": USAGE_TAG_VERTEX, "description": "The same operation under Vertex's prefix"},
    {
        "name": "Service",
        "description": "Probes, this documentation and the metrics scrape; no API key needed",
    },
]


@functools.cache
def build(metrics: bool = False) -> bytes:
    """The document; `metrics`: /metrics is served on this port, so it is described."""
    document = {
        "openapi": "3.1.0",
        "info": {
            "title": "Interactions API (self-hosted)",
            "version": "2026-05-20",
            "description": _DESCRIPTION,
        },
        "tags": _TAGS,
        "security": [{name: []} for name in _SECURITY_SCHEMES],
        "paths": {
            **_joined(interaction_paths(), search_paths()),
            **webhook_paths(),
            **agent_paths(),
            **trigger_paths(),
            **model_paths(),
            **generate_paths(),
            **usage_paths(),
            **service_paths(),
            **(metrics_path() if metrics else {}),
        },
        "components": {
            "schemas": {
                **schemas(),
                **webhook_schemas(),
                **agent_schemas(),
                **trigger_schemas(),
                **model_schemas(),
                **generate_schemas(),
                **search_schemas(),
                **usage_schemas(),
            },
            "headers": HEADERS,
            "securitySchemes": _SECURITY_SCHEMES,
        },
    }
    return msgspec.json.encode(document)


def _joined(paths: Json, more: Json) -> Json:
    """`paths` with `more`'s operations added, to its path items where both have the path."""
    joined = {path: dict(item) for path, item in paths.items()}
    for path, item in more.items():
        joined.setdefault(path, {}).update(item)
    return joined


@get(["/openapi.json", "/schema/openapi.json"])
async def document(request: Request[Any, Any, Any]) -> Response[bytes]:
    metrics = on_api_port(request.app.state.ix.settings.metrics)
    return Response(content=build(metrics), media_type="application/json")
