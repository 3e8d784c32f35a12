"""The OpenAPI document. Paths, parameters and responses are written out (paths.py, parameters.py), next
to what the handlers read; the request and reply schemas are generated from the wire types (schemas.py), so
the two cannot drift."""

from __future__ import annotations

import functools

import msgspec
from litestar import Response, get

from .common import Json
from .parameters import HEADERS
from .paths import interaction_paths, service_paths
from .schemas import schemas

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
        "paths": {**interaction_paths(), **service_paths()},
        "components": {
            "schemas": schemas(),
            "headers": HEADERS,
            "securitySchemes": _SECURITY_SCHEMES,
        },
    }
    return msgspec.json.encode(document)


@get(["/openapi.json", "/schema/openapi.json"])
async def document() -> Response[bytes]:
    return Response(content=build(), media_type="application/json")
