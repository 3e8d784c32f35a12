"""The models list in OpenAI's shape, as the openai SDKs' `client.models.list()` and `.retrieve(id)` send it:

    GET /v1/models         {"object": "list", "data": [{"id", "object": "model", "created", "owned_by"}]}
    GET /v1/models/{id}    one model; a 404 in OpenAI's envelope (`code: model_not_found`, `param: model`)

This module's router serves them under `/openai/v1`. Under `/v1` Google's handlers (api/models.py) hand over
the requests that speak OpenAI's dialect (dialect.py): litestar routes a path and method to one handler, and a
route of our own for `/v1/models/{id}` would hide every Google route under `/v1/...` with a path parameter
(its router does not go back from the literal segment `v1` to `{version}`).

The same models as Google's list (server/upstream/catalog.py), all on one page: OpenAI's list has no paging.
`owned_by` is the backend kind that serves the model (`echo`, `openai`, `anthropic`, `gemini`), what Google's
`description` says, and nothing else of the upstream. `created` is 0: no model here has a date, and a constant
(rather than the time of the call, as some servers answer) keeps the answer the same from every web process.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from litestar import Request, Response, get

from ...protocol.codec import json_encoder
from ...upstream import catalog
from ..common import json_response, shorten
from ..state import AppState
from . import errors

#: what `created` says of every model (see the module's docstring)
CREATED = 0


class Model(msgspec.Struct, kw_only=True):
    """openai.types.Model"""

    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str


class ModelList(msgspec.Struct, kw_only=True):
    object: Literal["list"] = "list"
    data: list[Model]


def _state(request: Request[Any, Any, Any]) -> AppState:
    # not common.app_state, which refuses an encoded slash in the path: an id never holds one, but a model's
    # name can (`openai/gpt-4o`), and the openai SDKs send it encoded (`/v1/models/openai%2Fgpt-4o`)
    state: AppState = request.app.state.ix
    state.auth.tenant(request)
    return state


def _models(state: AppState) -> list[Model]:
    listed = catalog.listed(state.settings.models)
    return [Model(id=each.name, created=CREATED, owned_by=each.kind) for each in listed]


def model_list(request: Request[Any, Any, Any]) -> Response[bytes]:
    """OpenAI's list; its errors in OpenAI's envelope also when Google's handlers hand the request over
    (their router's are Google's)."""
    try:
        return json_response(ModelList(data=_models(_state(request))))
    except Exception as exc:
        return errors.handle(request, exc)


def model(request: Request[Any, Any, Any], name: str) -> Response[bytes]:
    """The model whose id is `name` exactly (OpenAI's ids carry no `models/` prefix); errors as in
    model_list."""
    try:
        found = next((each for each in _models(_state(request)) if each.id == name), None)
    except Exception as exc:
        return errors.handle(request, exc)
    return json_response(found) if found is not None else _not_found(name)


def _not_found(name: str) -> Response[bytes]:
    message = f"The model {shorten(name)!r} does not exist (GET /v1/models lists them)"
    # OpenAI's own code for it, which its clients test for (errors.handle has none for a 404)
    error = errors.OpenAIError(
        message=message, type=errors.error_type(404), param="model", code="model_not_found"
    )
    return Response(
        content=json_encoder.encode(errors.OpenAIErrorBody(error=error)),
        status_code=404,
        media_type="application/json",
    )


# under `/openai/v1` only (see the module's docstring for `/v1`)
@get("/openai/v1/models")
async def list_models(request: Request[Any, Any, Any]) -> Response[bytes]:
    return model_list(request)


@get("/openai/v1/models/{name:path}")
async def get_model(request: Request[Any, Any, Any]) -> Response[bytes]:
    return model(request, str(request.path_params["name"]).lstrip("/"))


HANDLERS = [list_models, get_model]
