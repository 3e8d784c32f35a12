"""OpenAI's Responses API over the interaction record (server/dialects/responses/ for the codecs):

    POST   /v1/responses                       create (stream=true: api/openai/response_streams.py)
    GET    /v1/responses/{id}                  get (this turn's output, as a Response)
    POST   /v1/responses/{id}/cancel           cancel a background response (a foreground one is a 400)
    DELETE /v1/responses/{id}                  delete: {"id", "object": "response.deleted", "deleted": true}
    GET    /v1/responses/{id}/input_items      this turn's input items: after, before, limit, order

each under `/v1` and `/openai/v1` (paths.py), with OpenAI's error envelope (errors.py). A response is an
interaction: the same use cases (runner/create.py, runner/control.py), the same ids, either dialect's get
shows the same turn. An Idempotency-Key header is passed through as Google's dialect passes it (the openai
SDK does not send one itself: a client that retries creates sends it with the request)."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Response, delete, get, post
from litestar.response import Stream

from ...dialects.responses import decode, encode, items, wire
from ...errors import InvalidArgument, NotFound
from ...observability import context
from ...protocol import status as st
from ...protocol import views
from ...protocol.interaction import Interaction, is_interaction_id
from ...protocol.records import Record
from ...runner.replies import EventStream
from ..auth import NO_KEY_OPENAI
from ..body import read_body
from ..common import json_response, query, shorten
from ..state import AppState
from . import response_streams
from .paths import paths, state_of

COLLECTION = paths("/responses")
ITEM = paths("/responses/{response_id:str}")
CANCEL = paths("/responses/{response_id:str}/cancel")
INPUT_ITEMS = paths("/responses/{response_id:str}/input_items")

#: our create request's fields -> OpenAI's, for the errors the use cases name ours in (prefixes)
_PARAMS = {
    "previous_interaction_id": "previous_response_id",
    "system_instruction": "instructions",
    "labels": "metadata",
    "response_format": "text.format",
    "generation_config.thinking_level": "reasoning.effort",
    "generation_config.thinking_summaries": "reasoning.summary",
    "generation_config.": "",
}


class ResponseNotFound(NotFound):
    """A 404 in OpenAI's words, naming the parameter that names the response."""

    def __init__(self, response_id: str, field: str) -> None:
        super().__init__(response_id)
        self.args = (f"Response with id {shorten(response_id)!r} not found.",)
        self.field = field


def _param(field: str | None) -> str | None:
    if field is None:
        return None
    for ours, theirs in _PARAMS.items():
        if field.startswith(ours):
            return theirs + field[len(ours) :]
    return field


def _tenant(request: Request[Any, Any, Any]) -> tuple[AppState, str]:
    state = state_of(request)
    return state, state.auth.tenant(request, NO_KEY_OPENAI)


def _response_id(request: Request[Any, Any, Any]) -> str:
    value = str(request.path_params["response_id"])
    if not is_interaction_id(value):
        raise ResponseNotFound(value, "response_id")
    context.set_interaction(value)
    return value


async def _record(state: AppState, tenant: str, response_id: str) -> Record:
    try:
        return await state.control.get(tenant, response_id)
    except NotFound:
        raise ResponseNotFound(response_id, "response_id") from None


def _shown(interaction: Interaction, queued: bool) -> Interaction:
    """Google's dialect shows a background run no worker has taken as in_progress; OpenAI's as queued."""
    return msgspec.structs.replace(interaction, status=st.QUEUED) if queued else interaction


def _of_record(record: Record) -> wire.Response:
    interaction = views.from_record(record, full_timeline=False)
    return encode.response(_shown(interaction, record.status == st.QUEUED), background=record.background)


def _includes(request: Request[Any, Any, Any]) -> None:
    """`include` on a get or a listing: the values honoured (decode.INCLUDES), else a 400 naming it."""
    values = [*request.query_params.getall("include[]", []), *request.query_params.getall("include", [])]
    for index, value in enumerate(values):
        if value not in decode.INCLUDES:
            raise InvalidArgument(
                f"Only {', '.join(sorted(decode.INCLUDES))} can be included", f"include[{index}]"
            )


@post(COLLECTION, status_code=200)
async def create_response(request: Request[Any, Any, Any]) -> Response[bytes] | Stream:
    state, tenant = _tenant(request)
    http = state.settings.http
    body = await read_body(request, http.max_body_bytes, http.body_read_timeout_seconds)
    create, steps, warnings = decode.decode_create(body, strict=http.strict_unknown_fields)
    try:
        reply = await state.creator.create(
            tenant, create, steps, warnings, idempotency_key=request.headers.get("idempotency-key"), body=body
        )
    except InvalidArgument as exc:
        raise InvalidArgument(exc.message, _param(exc.field)) from None
    except NotFound as exc:
        if exc.interaction_id == create.previous_interaction_id:
            raise ResponseNotFound(exc.interaction_id, "previous_response_id") from None
        raise
    if isinstance(reply, EventStream):
        return response_streams.create_stream(reply, create, body)
    interaction = reply.interaction
    if interaction.id is not None:
        context.set_interaction(interaction.id)
    # a background create answers before any worker took it: OpenAI shows it queued
    queued = create.background and interaction.status == st.IN_PROGRESS
    return json_response(encode.response(_shown(interaction, queued), background=create.background))


@get(ITEM)
async def get_response(request: Request[Any, Any, Any]) -> Response[bytes] | Stream:
    state, tenant = _tenant(request)
    response_id = _response_id(request)
    _includes(request)
    if (streamed := await _stream(request, state, tenant, response_id)) is not None:
        return streamed
    return json_response(_of_record(await _record(state, tenant, response_id)))


async def _stream(
    request: Request[Any, Any, Any], state: AppState, tenant: str, response_id: str
) -> Stream | None:
    try:
        return await response_streams.get_stream(request, state, tenant, response_id)
    except NotFound:
        raise ResponseNotFound(response_id, "response_id") from None


@post(CANCEL, status_code=200)
async def cancel_response(request: Request[Any, Any, Any]) -> Response[bytes]:
    state, tenant = _tenant(request)
    response_id = _response_id(request)
    record = await _record(state, tenant, response_id)
    if not record.background:
        raise InvalidArgument("Only responses created with background=true can be cancelled", "response_id")
    if record.status not in (st.QUEUED, st.IN_PROGRESS):
        # OpenAI answers a cancel of a finished background response with the response as it is
        return json_response(_of_record(record))
    try:
        cancelled = await state.control.cancel(tenant, response_id)
    except InvalidArgument:
        # it finished between the read and the cancel
        cancelled = await _record(state, tenant, response_id)
    return json_response(_of_record(cancelled))


@delete(ITEM, status_code=200)
async def delete_response(request: Request[Any, Any, Any]) -> Response[bytes]:
    state, tenant = _tenant(request)
    response_id = _response_id(request)
    try:
        await state.control.delete(tenant, response_id)
    except NotFound:
        raise ResponseNotFound(response_id, "response_id") from None
    return json_response(wire.Deleted(id=response_id))


@get(INPUT_ITEMS)
async def list_input_items(request: Request[Any, Any, Any]) -> Response[bytes]:
    state, tenant = _tenant(request)
    response_id = _response_id(request)
    _includes(request)
    at = items.page_of(
        query(request, "after"), query(request, "before"), query(request, "limit"), query(request, "order")
    )
    record = await _record(state, tenant, response_id)
    return json_response(items.page(items.input_items(record.id, record.input_steps), at))


HANDLERS = [create_response, get_response, cancel_response, delete_response, list_input_items]
