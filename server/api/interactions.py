"""The Interactions resource: create, get, cancel, delete (spec §2), on any version segment and with the
optional Vertex `projects/{p}/locations/{l}/` segment."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, delete, get, post, route
from litestar.enums import HttpMethod
from litestar.response import Stream

from ..errors import InvalidArgument
from ..observability import context, metrics
from ..protocol import sse, views
from ..protocol.codec import decode_create
from ..protocol.interaction import is_interaction_id
from ..runner.replies import EventStream, Reply
from .body import read_body
from .common import BASES, empty, flag, json_response, shorten, state_of
from .errors import ApiError

COLLECTION = [f"{base}/interactions" for base in BASES]
ITEM = [f"{base}/interactions/{{interaction_id:str}}" for base in BASES]
CANCEL = [f"{base}/interactions/{{interaction_id:str}}/cancel" for base in BASES]


def _interaction_id(request: Request[Any, Any, Any]) -> str:
    value = request.path_params["interaction_id"]
    if not is_interaction_id(value):
        raise ApiError(404, f"Interaction {shorten(value)!r} was not found")
    context.set_interaction(value)
    return str(value)


def _response(reply: Reply | EventStream) -> Response[bytes] | Stream:
    if isinstance(reply, Reply):
        if reply.interaction.id is not None:
            context.set_interaction(reply.interaction.id)
        return json_response(reply.interaction)
    return Stream(
        metrics.streaming(reply.frames), media_type="text/event-stream", headers=sse.HEADERS, status_code=200
    )


@post(COLLECTION, status_code=200)
async def create_interaction(request: Request[Any, Any, Any]) -> Response[bytes] | Stream:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    http = state.settings.http
    body = await read_body(request, http.max_body_bytes, http.body_read_timeout_seconds)
    create, steps, warnings = decode_create(body, strict=http.strict_unknown_fields)
    reply = await state.creator.create(
        tenant,
        create,
        steps,
        warnings,
        idempotency_key=request.headers.get("idempotency-key"),
        body=body,
    )
    return _response(reply)


@get(ITEM)
async def get_interaction(request: Request[Any, Any, Any]) -> Response[bytes] | Stream:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    interaction_id = _interaction_id(request)
    stream = flag(request, "stream")
    # checked with a stream too, where it does not apply: a bad value is refused, never silently ignored
    include_input = flag(request, "include_input", "includeInput")
    last_event_id = request.query_params.get("last_event_id") or request.query_params.get("lastEventId")
    if last_event_id is None and stream:
        last_event_id = request.headers.get("last-event-id")
    if last_event_id is not None and not stream:
        raise InvalidArgument("`last_event_id` is only valid with `stream=true`", "last_event_id")
    if stream:
        replay = await state.events.prepare(tenant, interaction_id, last_event_id)
        if last_event_id is not None:
            metrics.stream_resumed()
        return _response(EventStream(frames=state.events.frames(replay)))
    record = await state.control.get(tenant, interaction_id)
    return json_response(views.from_record(record, full_timeline=True, include_input=include_input))


@post(CANCEL, status_code=200)
async def cancel_interaction(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    record = await state.control.cancel(tenant, _interaction_id(request))
    return json_response(views.from_record(record, full_timeline=True))


@delete(ITEM, status_code=200)
async def delete_interaction(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    await state.control.delete(tenant, _interaction_id(request))
    return empty()


_ITEM_ALLOW = ", ".join(sorted({*get_interaction.http_methods, *delete_interaction.http_methods, "OPTIONS"}))
#: the collection's POST is here, its GET (the list) in api/search.py
_COLLECTION_ALLOW = "GET, OPTIONS, POST"


@route(COLLECTION, http_method=HttpMethod.OPTIONS, include_in_schema=False)
async def collection_options() -> Response[None]:
    """As item_options, for the collection's two handlers."""
    return Response(None, status_code=204, headers={"Allow": _COLLECTION_ALLOW})


@route(ITEM, http_method=HttpMethod.OPTIONS, include_in_schema=False)
async def item_options() -> Response[None]:
    """litestar builds a path's OPTIONS answer when its first handler is registered, so on the item path
    it would list GET and not DELETE. Registered before them (litestar refuses a second OPTIONS handler)."""
    return Response(None, status_code=204, headers={"Allow": _ITEM_ALLOW})


HANDLERS = [
    item_options,
    collection_options,
    create_interaction,
    get_interaction,
    cancel_interaction,
    delete_interaction,
]
