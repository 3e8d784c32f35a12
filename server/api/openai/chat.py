"""`POST /v1/chat/completions` (and under /openai/v1): OpenAI's Chat Completions, as one create of the
Interactions use case (Creator.create, as api/interactions.py asks it): stateless unless `store: true`
(then a stored interaction, foreground, listed as a stored chat completion: chat_stored.py).

A completion that was not stored is answered with an id of its own (`chatcmpl-...`), which names nothing
afterwards; a stored one has its interaction's id (Google's and OpenAI's Responses `get` show the same
turn). A failed completion is an error (502, or the stream's error chunk), a content block is
`finish_reason: content_filter` (dialects/chat/encode.py).
"""

from __future__ import annotations

import time
from typing import Any

from litestar import Request, Response, post
from litestar.response import Stream

from ...dialects.chat import encode
from ...dialects.chat.decode import decode
from ...dialects.chat.events import ChunkStream, render
from ...observability import context, metrics
from ...protocol import sse
from ...protocol.records import CHAT_COMPLETIONS
from ...runner.ids import new_id
from ...runner.replies import Reply
from ..body import read_body
from ..common import json_response
from ..errors import ApiError
from .paths import paths, state_of

COLLECTION = paths("/chat/completions")


@post(COLLECTION, status_code=200)
async def create_chat_completion(request: Request[Any, Any, Any]) -> Response[bytes] | Stream:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    http = state.settings.http
    body = await read_body(request, http.max_body_bytes, http.body_read_timeout_seconds)
    chat = decode(body, strict=http.strict_unknown_fields)
    reply = await state.creator.create(
        tenant,
        chat.create,
        chat.steps,
        chat.warnings,
        idempotency_key=request.headers.get("idempotency-key"),
        body=body,
        dialect=CHAT_COMPLETIONS,
    )
    # the id of a completion nothing stored (a stored one's is its interaction's)
    own_id = "chatcmpl-" + new_id().removeprefix("v1_")
    if isinstance(reply, Reply):
        interaction = reply.interaction
        if interaction.id is not None:
            context.set_interaction(interaction.id)
        failed = encode.failure(interaction)
        if failed is not None:
            raise ApiError(502, f"The completion failed: {failed.message}")
        stored = interaction.id is not None
        return json_response(encode.completion(interaction, own_id, stored=stored))
    chunks = ChunkStream(own_id, chat.create.model or "", int(time.time()), include_usage=chat.include_usage)
    frames = metrics.streaming(render(reply.frames, chunks))
    return Stream(frames, media_type="text/event-stream", headers=sse.HEADERS, status_code=200)


HANDLERS = [create_chat_completion]
