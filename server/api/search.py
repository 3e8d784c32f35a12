"""Finding stored interactions, our extension (Google's API has neither; README "List, search and delete
by filter"), on every version path and the Vertex form:

    GET  /{v}/interactions?labels.<k>=&status=&model=&agent=&created_after=&created_before=&roots_only=
         &page_size=&page_token=&include_steps=          a page, newest first (server/search/listing.py)
    POST /{v}/interactions:purge {filter, force}         delete what a filter matches, conversations and all:
                                                         without force a count (server/search/deleting.py)
    GET  /{v}/operations/{id}                            a purge's progress
"""

from __future__ import annotations

import re
from typing import Any

from litestar import Request, Response, get, post

from ..search import filters
from ..search.deleting import PurgeRequest
from .body import read_struct
from .common import BASES, flag, json_response, state_of
from .errors import ApiError
from .interactions import COLLECTION

PURGE = [f"{base}/interactions:purge" for base in BASES]
OPERATION = [f"{base}/operations/{{operation_id:str}}" for base in BASES]

_PURGE_ID = re.compile(r"purge_[A-Za-z0-9_-]{1,32}")
#: query parameters of a list that are not filters
_NOT_FILTERS = {"page_size", "page_token", "include_steps", "key"}


@get(COLLECTION)
async def list_interactions(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    params = request.query_params
    given = filters.from_query({name: params[name] for name in params}, _NOT_FILTERS)
    page = await state.listing.page(
        tenant,
        given,
        page_size=params.get("page_size"),
        page_token=params.get("page_token"),
        include_steps=flag(request, "include_steps"),
    )
    return json_response(page)


@post(PURGE, status_code=200)
async def purge_interactions(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    body = await read_struct(request, state.settings.http, PurgeRequest)
    return json_response(await state.purges.request(tenant, body))


@get(OPERATION)
async def get_operation(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    operation_id = str(request.path_params["operation_id"])
    found = await state.purges.operation(tenant, operation_id) if _PURGE_ID.fullmatch(operation_id) else None
    if found is None:
        raise ApiError(404, f"Operation {operation_id[:64]!r} was not found")
    return json_response(found)


HANDLERS = [list_interactions, purge_interactions, get_operation]
