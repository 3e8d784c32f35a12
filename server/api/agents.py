"""The Agents resource (spec: webhooks-agents-mcp.md §2) on every version path the interactions accept
(and the Vertex form), as the SDK's `client.agents.*` sends it:

    POST   /{v}/agents                            create: the Agent
    GET    /{v}/agents?page_size=&page_token=     list, oldest first
    GET    /{v}/agents/{id}                       get
    DELETE /{v}/agents/{id}                       delete: {}

The SDK has no update (an agent is replaced by deleting it and creating it again): PATCH answers 405.
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, delete, get, post, route
from litestar.enums import HttpMethod

from ..agents.wire import CreateAgent
from .body import read_struct
from .common import BASES, json_response, query, state_of

COLLECTION = [f"{base}/agents" for base in BASES]
ITEM = [f"{base}/agents/{{agent_id:str}}" for base in BASES]


@post(COLLECTION, status_code=200)
async def create_agent(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    body = await read_struct(request, state.settings.http, CreateAgent)
    return json_response(await state.agents.create(tenant, body))


@get(COLLECTION)
async def list_agents(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    size, token = query(request, "page_size", "pageSize"), query(request, "page_token", "pageToken")
    return json_response(await state.agents.page(tenant, size, token))


@get(ITEM)
async def get_agent(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    return json_response(await state.agents.get(tenant, str(request.path_params["agent_id"])))


@delete(ITEM, status_code=200)
async def delete_agent(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    await state.agents.delete(tenant, str(request.path_params["agent_id"]))
    return Response(content=b"{}", status_code=200, media_type="application/json")


@route(COLLECTION, http_method=HttpMethod.OPTIONS, include_in_schema=False)
async def agents_options() -> Response[None]:
    return Response(None, status_code=204, headers={"Allow": "GET, OPTIONS, POST"})


@route(ITEM, http_method=HttpMethod.OPTIONS, include_in_schema=False)
async def agent_item_options() -> Response[None]:
    return Response(None, status_code=204, headers={"Allow": "DELETE, GET, OPTIONS"})


HANDLERS = [agents_options, agent_item_options, create_agent, list_agents, get_agent, delete_agent]
