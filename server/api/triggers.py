"""The Triggers resource on every version path the interactions accept (and the Vertex form), as the
SDK's `client.triggers.*` sends it:

    POST   /{v}/triggers                                 create: the Trigger
    GET    /{v}/triggers?page_size=&page_token=&filter=  list, oldest first (`filter`: `status = paused`)
    GET    /{v}/triggers/{id}                            get
    PATCH  /{v}/triggers/{id}?update_mask=               update (display_name, status: active | paused)
    DELETE /{v}/triggers/{id}                            delete: {}
    POST   /{v}/triggers/{id}/executions                 run now: the TriggerExecution
    GET    /{v}/triggers/{id}/executions?page_size=      list its executions, oldest first
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, delete, get, patch, post, route
from litestar.enums import HttpMethod

from ..triggers.wire import CreateTrigger, UpdateTrigger
from .body import read_struct
from .common import BASES, empty, json_response, query, state_of

COLLECTION = [f"{base}/triggers" for base in BASES]
ITEM = [f"{base}/triggers/{{trigger_id:str}}" for base in BASES]
EXECUTIONS = [f"{base}/triggers/{{trigger_id:str}}/executions" for base in BASES]


def _id(request: Request[Any, Any, Any]) -> str:
    return str(request.path_params["trigger_id"])


def _page(request: Request[Any, Any, Any]) -> tuple[str | None, str | None]:
    return query(request, "page_size", "pageSize"), query(request, "page_token", "pageToken")


@post(COLLECTION, status_code=200)
async def create_trigger(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    body = await read_struct(request, state.settings.http, CreateTrigger)
    return json_response(await state.triggers.create(tenant, body))


@get(COLLECTION)
async def list_triggers(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    return json_response(await state.triggers.page(tenant, *_page(request), query(request, "filter")))


@get(ITEM)
async def get_trigger(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    return json_response(await state.triggers.get(tenant, _id(request)))


@patch(ITEM)
async def update_trigger(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    body = await read_struct(request, state.settings.http, UpdateTrigger)
    mask = query(request, "update_mask", "updateMask")
    return json_response(await state.triggers.update(tenant, _id(request), body, mask))


@delete(ITEM, status_code=200)
async def delete_trigger(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    await state.triggers.delete(tenant, _id(request))
    return empty()


@post(EXECUTIONS, status_code=200)
async def run_trigger(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    return json_response(await state.triggers.run(tenant, _id(request)))


@get(EXECUTIONS)
async def list_executions(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    return json_response(await state.triggers.executions(tenant, _id(request), *_page(request)))


@route(COLLECTION, http_method=HttpMethod.OPTIONS, include_in_schema=False)
async def triggers_options() -> Response[None]:
    return Response(None, status_code=204, headers={"Allow": "GET, OPTIONS, POST"})


@route(ITEM, http_method=HttpMethod.OPTIONS, include_in_schema=False)
async def trigger_item_options() -> Response[None]:
    return Response(None, status_code=204, headers={"Allow": "DELETE, GET, OPTIONS, PATCH"})


@route(EXECUTIONS, http_method=HttpMethod.OPTIONS, include_in_schema=False)
async def executions_options() -> Response[None]:
    return Response(None, status_code=204, headers={"Allow": "GET, OPTIONS, POST"})


HANDLERS = [
    triggers_options,
    trigger_item_options,
    executions_options,
    create_trigger,
    list_triggers,
    get_trigger,
    update_trigger,
    delete_trigger,
    run_trigger,
    list_executions,
]
