"""OpenAI's stored chat completions (those created with `store: true`), under /v1 and /openai/v1:

    GET    /chat/completions?model=&metadata[k]=v&after=&limit=&order=   a page, oldest first by default
    GET    /chat/completions/{id}                                         one
    GET    /chat/completions/{id}/messages?after=&limit=&order=           its request's messages
    POST   /chat/completions/{id}  {metadata}                             refused: labels are written once
    DELETE /chat/completions/{id}                                         {id, object, deleted}

A stored completion is a stored interaction whose StoredConfig.dialect is `chat.completions` (its search
tag `d:chat.completions`, store/search_tags.py): only those are listed or read here (any other id is a
404), while Google's and the Responses API's get, list and delete see them as the interactions they are.
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, delete, get, post

from ...dialects.chat import encode
from ...dialects.chat import objects as ob
from ...dialects.chat.wire import UpdateChatCompletion
from ...errors import InvalidArgument, NotFound
from ...protocol import views
from ...protocol.interaction import is_interaction_id
from ...protocol.records import CHAT_COMPLETIONS, Record
from ...search import cursor
from ..body import read_struct
from ..common import json_response, shorten
from ..errors import ApiError
from ..state import AppState
from .chat import COLLECTION
from .paths import paths, state_of

ITEM = paths("/chat/completions/{completion_id:str}")
MESSAGES = paths("/chat/completions/{completion_id:str}/messages")
#: query parameters of the list that are not filters (`key`: Google's way of sending the API key)
_PAGING = {"after", "limit", "order", "key"}


async def _stored(state: AppState, tenant: str, request: Request[Any, Any, Any]) -> Record:
    completion_id = str(request.path_params["completion_id"])
    missing = ApiError(404, f"No stored chat completion found with id {shorten(completion_id)!r}")
    if not is_interaction_id(completion_id):
        raise missing
    try:
        record = await state.control.get(tenant, completion_id)
    except NotFound:
        raise missing from None
    if record.config.dialect != CHAT_COMPLETIONS:
        raise missing
    return record


def _shown(record: Record) -> ob.ChatCompletion:
    return encode.completion(views.from_record(record, full_timeline=False), record.id, stored=True)


@get(ITEM)
async def get_chat_completion(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    return json_response(_shown(await _stored(state, tenant, request)))


@post(ITEM, status_code=200)
async def update_chat_completion(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    await _stored(state, tenant, request)
    await read_struct(request, state.settings.http, UpdateChatCompletion)
    raise InvalidArgument(
        "A stored completion's metadata cannot be changed: it is its interaction's labels, written once, "
        "when it was created",
        "metadata",
    )


@delete(ITEM, status_code=200)
async def delete_chat_completion(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    record = await _stored(state, tenant, request)
    await state.control.delete(tenant, record.id)
    return json_response(ob.ChatCompletionDeleted(id=record.id))


@get(COLLECTION)
async def list_chat_completions(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    params = request.query_params
    labels: dict[str, str] = {}
    for name in params:
        if name.startswith("metadata[") and name.endswith("]") and len(name) > len("metadata[]"):
            labels[name[len("metadata[") : -1]] = params[name]
        elif name not in _PAGING and name != "model":
            raise InvalidArgument(
                "Not a parameter of this list (model, metadata[<key>], after, limit, order)", name
            )
    wanted = cursor.query(dialect=CHAT_COMPLETIONS, labels=labels, model=params.get("model") or None)
    found = await cursor.page(
        state.listing.search,
        tenant,
        wanted,
        after=params.get("after") or None,
        limit=cursor.limit_of(params.get("limit")),
        oldest_first=cursor.ascending(params.get("order")),
    )
    data = [_shown(each.record) for each in found.found]
    return json_response(_page(ob.ChatCompletionList, data, found.has_more))


@get(MESSAGES)
async def list_chat_completion_messages(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    record = await _stored(state, tenant, request)
    params = request.query_params
    limit = cursor.limit_of(params.get("limit"))
    messages = encode.store_messages(record.id, record.config.input)
    if not cursor.ascending(params.get("order")):
        messages.reverse()
    after = params.get("after")
    if after:
        at = next((index for index, message in enumerate(messages) if message.id == after), None)
        if at is None:
            raise InvalidArgument(f"No message {shorten(after)!r} in this completion", "after")
        messages = messages[at + 1 :]
    return json_response(_page(ob.StoreMessageList, messages[:limit], len(messages) > limit))


def _page(kind: Any, data: list[Any], has_more: bool) -> Any:
    first, last = (data[0].id, data[-1].id) if data else (None, None)
    return kind(data=data, first_id=first, last_id=last, has_more=has_more)


HANDLERS = [
    get_chat_completion,
    update_chat_completion,
    delete_chat_completion,
    list_chat_completions,
    list_chat_completion_messages,
]
