"""The Models resource (spec: webhooks-agents-mcp.md §4) on every version path the interactions accept (and
the Vertex form), as the SDK's `client.models.list()` and `client.models.get()` send it:

    GET /{v}/models?pageSize=&pageToken=     list: {"models": [...], "nextPageToken"?} (also page_size,
                                             page_token)
    GET /{v}/models/{name}                   get: one model (`echo` or `models/echo`), 404 naming it

What is listed: server/upstream/catalog.py. The API key is required, as for every resource; the list is the
same for every key.

`/v1/models` and `/v1/models/{name}` are the openai SDKs' calls too: a request there that speaks OpenAI's
dialect (openai/dialect.py: a Bearer key and nothing of Google's) is answered in OpenAI's shape by
openai/models.py. Here, not by a route of its own: litestar routes a path and method to one handler.
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, get, route
from litestar.enums import HttpMethod

from ..upstream import catalog
from .common import BASES, json_response, queries, shorten, state_of
from .errors import ApiError
from .openai import dialect
from .openai import models as openai_models
from .state import AppState

COLLECTION = [f"{base}/models" for base in BASES]
#: a path parameter: a configured name may hold a slash (`openai/gpt-4o`), and the SDK sends `models/<id>`
ITEM = [f"{base}/models/{{name:path}}" for base in BASES]


def _models(state: AppState) -> list[catalog.Model]:
    return catalog.catalogue(state.settings.models, state.settings.echo)


def _openai(request: Request[Any, Any, Any]) -> bool:
    """An openai SDK's call: on `/v1` (not another version, not the Vertex form), in OpenAI's dialect."""
    params = request.path_params
    return params.get("version") == "v1" and "project" not in params and dialect.speaks_openai(request)


@get(COLLECTION)
async def list_models(request: Request[Any, Any, Any]) -> Response[bytes]:
    if _openai(request):
        return openai_models.model_list(request)
    state = state_of(request)
    state.auth.tenant(request)
    size, token = queries(request, "pageSize", "page_size"), queries(request, "pageToken", "page_token")
    return json_response(catalog.page(_models(state), size, token))


@get(ITEM)
async def get_model(request: Request[Any, Any, Any]) -> Response[bytes]:
    name = str(request.path_params["name"]).lstrip("/")
    if _openai(request):
        return openai_models.model(request, name)
    state = state_of(request)
    state.auth.tenant(request)
    found = catalog.find(_models(state), name) if name else None
    if found is None:
        raise ApiError(404, f"Model {shorten(name)!r} was not found (GET /{{version}}/models lists them)")
    return json_response(found)


@route(COLLECTION, http_method=HttpMethod.OPTIONS, include_in_schema=False)
async def models_options() -> Response[None]:
    return Response(None, status_code=204, headers={"Allow": "GET, OPTIONS"})


@route(ITEM, http_method=HttpMethod.OPTIONS, include_in_schema=False)
async def model_item_options(request: Request[Any, Any, Any]) -> Response[None]:
    # a model is read (GET); one of its methods (`models/m:generateContent`: generate.py) is called
    allowed = "POST, OPTIONS" if ":" in str(request.path_params["name"]) else "GET, OPTIONS"
    return Response(None, status_code=204, headers={"Allow": allowed})


HANDLERS = [models_options, model_item_options, list_models, get_model]
