"""The Webhooks resource (spec §1) on every version path the interactions accept (and the Vertex form):

    POST   /{v}/webhooks                            create: the Webhook, with new_signing_secret (only here)
    GET    /{v}/webhooks?page_size=&page_token=     list, oldest first
    GET    /{v}/webhooks/{id}                       get
    PATCH  /{v}/webhooks/{id}?update_mask=          update (name, uri, subscribed_events, state)
    DELETE /{v}/webhooks/{id}                       delete: {}
    POST   /{v}/webhooks/{id}:ping                  queue a signed test delivery: {}
    POST   /{v}/webhooks/{id}:rotateSigningSecret   {revocation_behavior?} -> {secret}
    GET    /{v}/webhooks/{id}/deliveries?page_size= this server's extension (Google has none): the last
                                                    delivery attempts, newest first
    GET    /.well-known/jwks.json                   the keys that sign webhook_config deliveries (no API key)

`:ping` and `:rotateSigningSecret` are custom methods in Google's style: the router sees `{id}:ping` as
one segment, so the item's POST splits the verb off.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
from litestar import Request, Response, delete, get, patch, post, route
from litestar.enums import HttpMethod

from ..errors import WebhookNotFound
from ..protocol.codec import json_encoder
from ..webhooks.wire import CreateWebhook, Deliveries, RotateSigningSecret, UpdateWebhook
from .body import read_struct
from .common import BASES, empty, json_response, query, state_of
from .errors import ApiError
from .state import AppState

T = TypeVar("T")

COLLECTION = [f"{base}/webhooks" for base in BASES]
ITEM = [f"{base}/webhooks/{{webhook_id:str}}" for base in BASES]
DELIVERIES = [f"{base}/webhooks/{{webhook_id:str}}/deliveries" for base in BASES]
JWKS_PATH = "/.well-known/jwks.json"
#: receivers may cache the JWKS this long: a replaced key stays published for far longer (the overlap)
JWKS_CACHE = "public, max-age=300"


#: what the item path answers: `{id}` plain, or with a custom method's verb (`{id}:ping`)
_ITEM_ALLOW = "DELETE, GET, OPTIONS, PATCH"
_VERB_ALLOW = "OPTIONS, POST"


def _item_id(request: Request[Any, Any, Any]) -> str:
    """The id of a plain item path; `{id}:verb` takes only POST (a 405, as the document says)."""
    segment = str(request.path_params["webhook_id"])
    if ":" in segment:
        raise ApiError(405, f"{request.method} is not allowed on a custom method", {"Allow": _VERB_ALLOW})
    return segment


@post(COLLECTION, status_code=200)
async def create_webhook(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    body = await read_struct(request, state.settings.http, CreateWebhook)
    return json_response(await state.webhooks.create(tenant, body))


@get(COLLECTION)
async def list_webhooks(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    size, token = query(request, "page_size", "pageSize"), query(request, "page_token", "pageToken")
    return json_response(await state.webhooks.page(tenant, size, token))


@get(ITEM)
async def get_webhook(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    return json_response(await state.webhooks.get(tenant, _item_id(request)))


@patch(ITEM)
async def update_webhook(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    webhook_id = _item_id(request)
    body = await read_struct(request, state.settings.http, UpdateWebhook)
    mask = query(request, "update_mask", "updateMask")
    return json_response(await state.webhooks.update(tenant, webhook_id, body, mask))


@delete(ITEM, status_code=200)
async def delete_webhook(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    await state.webhooks.delete(tenant, _item_id(request))
    return empty()


@post(ITEM, status_code=200)
async def webhook_method(request: Request[Any, Any, Any]) -> Response[bytes]:
    """`{id}:ping` and `{id}:rotateSigningSecret`; any other verb names no webhook."""
    state = state_of(request)
    tenant = state.auth.tenant(request)
    segment = str(request.path_params["webhook_id"])
    webhook_id, colon, verb = segment.partition(":")
    if not colon:
        raise ApiError(
            405, "POST is not allowed on a webhook (its custom methods are)", {"Allow": _ITEM_ALLOW}
        )
    if verb == "ping":
        await read_struct(request, state.settings.http, dict[str, Any])
        # the webhook must exist; the delivery is queued, never sent from the request
        await state.webhooks.record(tenant, webhook_id)
        await state.webhook_events.ping(tenant, webhook_id)
        return empty()
    if verb == "rotateSigningSecret":
        body = await read_struct(request, state.settings.http, RotateSigningSecret)
        return json_response(await state.webhooks.rotate(tenant, webhook_id, body.revocation_behavior))
    raise WebhookNotFound(segment)


@get(DELIVERIES)
async def webhook_deliveries(request: Request[Any, Any, Any]) -> Response[bytes]:
    """This server's extension: the webhook's last delivery attempts, newest first."""
    state = state_of(request)
    tenant = state.auth.tenant(request)
    found = await state.webhooks.deliveries(
        tenant, request.path_params["webhook_id"], query(request, "page_size")
    )
    return json_response(Deliveries(deliveries=[msgspec.Raw(each) for each in found]))


@get(JWKS_PATH)
async def jwks(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The JWKS of webhook_config deliveries; the first key is made on the first read, if none yet."""
    state: AppState = request.app.state.ix
    await state.keyring.current()
    document = await state.keyring.document()
    return Response(
        content=json_encoder.encode(document),
        status_code=200,
        media_type="application/json",
        headers={"Cache-Control": JWKS_CACHE},
    )


@route(COLLECTION, http_method=HttpMethod.OPTIONS, include_in_schema=False)
async def webhooks_options() -> Response[None]:
    return Response(None, status_code=204, headers={"Allow": "GET, OPTIONS, POST"})


@route(ITEM, http_method=HttpMethod.OPTIONS, include_in_schema=False)
async def webhook_item_options(request: Request[Any, Any, Any]) -> Response[None]:
    """litestar builds a path's OPTIONS answer from its first handler only (see interactions.item_options);
    and `{id}` and `{id}:verb` are one route here, two paths in the document."""
    allow = _VERB_ALLOW if ":" in str(request.path_params["webhook_id"]) else _ITEM_ALLOW
    return Response(None, status_code=204, headers={"Allow": allow})


HANDLERS = [
    webhooks_options,
    webhook_item_options,
    create_webhook,
    list_webhooks,
    get_webhook,
    update_webhook,
    delete_webhook,
    webhook_method,
    webhook_deliveries,
    jwks,
]
