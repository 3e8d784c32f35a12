"""The Responses API's two streams, rendered from our event log by its grammar (dialects/responses/
events.py): a create with `stream: true`, and `GET /v1/responses/{id}?stream=true&starting_after=N`, which
any web process serves from the log's start (our `last_event_id=None`), dropping the events numbered N or
less: the numbers are the log's, the same in every process. RESP's handlers (responses.py) call these.

`include_obfuscation` (the create's `stream_options`, the get's query): true pads each delta event with
random characters in `obfuscation` (a side channel's mitigation over an untrusted network); false, and a
request that does not say, add none (OpenAI pads unless told not to: a server one runs oneself is mostly
read over links its owner trusts, and the padding costs every event bytes).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec
from litestar import Request
from litestar.response import Stream

from ...dialects.responses.events import Renderer, render
from ...errors import InvalidArgument
from ...observability import metrics
from ...protocol import sse, views
from ...protocol.interaction import CreateRequest
from ...runner.replies import EventStream
from ..common import flag, query
from ..state import AppState

#: the largest `starting_after`: a sequence number is a count of events, which no log comes near
_MAX_AFTER = 2**63 - 1


class _StreamOptions(msgspec.Struct, gc=False):
    include_obfuscation: bool | None = None


class _Body(msgspec.Struct, gc=False):
    """The create body's `stream_options`, read apart (decode.py has checked the body)."""

    stream_options: _StreamOptions | None = None


_options = msgspec.json.Decoder(_Body)


def create_stream(reply: EventStream, create: CreateRequest, body: bytes) -> Stream:
    """A create's stream (`stream: true`): its run's frames, or its log's for a background one."""
    options = _options.decode(body).stream_options
    renderer = Renderer(
        background=create.background,
        config=create,
        obfuscate=bool(options and options.include_obfuscation),
    )
    return _stream(render(reply.frames, renderer))


async def get_stream(
    request: Request[Any, Any, Any], state: AppState, tenant: str, response_id: str
) -> Stream | None:
    """`GET /v1/responses/{id}?stream=true`: the response's stream from its start, after `starting_after`;
    None for a get without `stream=true` (a 400 for the stream's parameters on it).

    A 400 names `starting_after` when it is no sequence number, or when the response's log has expired and
    the stream would be rebuilt from its record (protocol/replay.py), whose events are not the log's: their
    numbers would not be the ones the client counted. A response that never had a log (a plain create) has
    only the rebuilt numbering: a resume of it is served."""
    after = starting_after(request)
    obfuscate = flag(request, "include_obfuscation")
    if not flag(request, "stream"):
        for name in ("starting_after", "include_obfuscation"):
            if query(request, name) is not None:
                raise InvalidArgument(f"`{name}` is only valid with `stream=true`", name)
        return None
    replay = await state.events.prepare(tenant, response_id, None)
    record = await state.control.get(tenant, response_id)
    if after is not None and not replay.follow and record.logged:
        raise InvalidArgument(
            "This response's event log has expired: its stream is rebuilt from the stored response, with "
            "other sequence numbers; stream it from the start (without starting_after)",
            "starting_after",
        )
    if after is not None:
        metrics.stream_resumed()
    renderer = Renderer(
        after=after,
        background=record.background,
        config=views.from_record(record, full_timeline=False),
        obfuscate=obfuscate,
    )
    return _stream(render(state.events.frames(replay), renderer))


def starting_after(request: Request[Any, Any, Any]) -> int | None:
    """`starting_after` as sent (a 400 naming it for anything but a sequence number), or None."""
    raw = query(request, "starting_after")
    if raw is None:
        return None
    # isdigit() alone takes any script's digits, which int() then reads
    if not (raw.isascii() and raw.isdigit()) or int(raw) > _MAX_AFTER:
        shown = raw if len(raw) <= 40 else raw[:40] + "..."
        raise InvalidArgument(f"{shown!r} is not a sequence number (an integer from 0)", "starting_after")
    return int(raw)


def _stream(frames: AsyncIterator[bytes]) -> Stream:
    return Stream(
        metrics.streaming(frames), media_type="text/event-stream", headers=sse.HEADERS, status_code=200
    )
