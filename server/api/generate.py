"""Gemini's generateContent dialect (dialects/generate/): `POST .../models/{model}:{method}` on every version
path and in both Vertex forms, as the google-genai SDKs call it.

    :generateContent          one turn, stateless (a store=false create of the Interactions use case):
                              a GenerateContentResponse
    :streamGenerateContent    the same turn streamed: with `alt=sse`, SSE events of chunks; without (or
                              with `alt=json`), one JSON array of the chunks, written as they come
    :countTokens              {totalTokens}: the backend's own count, or our estimate (runner/counting.py)

Nothing is stored, so there is nothing to get. What the server could not apply is said in the
`x-ix-warnings` header (unknown fields, safety settings a backend cannot apply, a count that is an
estimate): the response has no field for it; a control character a warning quotes is escaped there. An
`alt` other than `sse` and `json` is a 400 naming it, on every method. A failed turn is an error in
Google's shape, with the status the upstream's failure stands for (encode.error_status: 429, 503, 504,
else 502), or the stream's last chunk. When the client goes away, the run stops and the upstream call is
closed (the relay's close, runner/replies.py).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

from litestar import Request, Response, post
from litestar.response import Stream

from ..dialects.generate import decode, encode, wire
from ..dialects.generate.events import Chunks, render
from ..errors import InvalidArgument
from ..observability import metrics
from ..protocol import sse
from ..protocol.codec import json_encoder
from ..runner.counting import count_tokens
from ..runner.ids import new_token
from ..runner.replies import Reply
from .body import read_body
from .common import BASES, shorten, state_of
from .errors import ApiError
from .state import AppState

#: the model paths: Google's (`/v1beta/models/m:generateContent`), the Vertex form of BASES, and Vertex's
#: own (`.../publishers/google/models/m:generateContent`); `name` holds `m:method`
ITEM = [
    *(f"{base}/models/{{name:path}}" for base in BASES),
    f"{BASES[1]}/publishers/{{publisher:str}}/models/{{name:path}}",
]
WARNINGS_HEADER = "x-ix-warnings"
_METHODS = ("generateContent", "streamGenerateContent", "countTokens")
#: `alt`'s values: is it SSE
_ALT = {"sse": True, "json": False}
#: the control characters (U+0000-U+001F, U+007F), which no header line may hold, as escapes
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F)} | {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}


@post(ITEM, status_code=200)
async def model_method(request: Request[Any, Any, Any]) -> Response[bytes] | Stream:
    state = state_of(request)
    model, _, method = str(request.path_params["name"]).lstrip("/").rpartition(":")
    if method not in _METHODS or not model:
        shown = shorten(str(request.path_params["name"]))
        raise ApiError(404, f"No method {shown!r} here: {', '.join(_METHODS)} are served")
    model = model.removeprefix("models/")
    tenant = state.auth.tenant(request)
    sse_form = _asks_sse(request)
    http = state.settings.http
    body = await read_body(request, http.max_body_bytes, http.body_read_timeout_seconds)
    if method == "countTokens":
        return await _count(state, model, body)
    stream = method == "streamGenerateContent"
    turn = decode.decode(body, model, stream=stream, strict=http.strict_unknown_fields)
    warnings = [
        *turn.warnings,
        *_unapplied(state, turn.create.model or "", bool(turn.create.safety_settings)),
    ]
    reply = await state.creator.create(tenant, turn.create, turn.steps, warnings)
    response_id = new_token()
    if isinstance(reply, Reply):
        interaction = reply.interaction
        failed = encode.failure(interaction)
        if failed is not None:
            code, status = encode.error_status(failed.code)
            raise ApiError(code, f"The model call failed: {failed.message}", status=status)
        return _json(encode.response(interaction, response_id), interaction.warnings or warnings)
    chunks = Chunks(response_id, model)
    framed = render(reply.frames, chunks, sse=sse_form)
    media = "text/event-stream" if sse_form else "application/json"
    headers = {**sse.HEADERS, **_warnings_header(warnings)}
    return Stream(metrics.streaming(framed), media_type=media, headers=headers, status_code=200)


def _asks_sse(request: Request[Any, Any, Any]) -> bool:
    """`alt=sse` in the query; `alt=json` or none is Google's default, any other `alt` is refused (not
    answered in a form the client did not ask for). The SDKs' query is `alt=sse` alone, seen as it is:
    litestar's parsed parameters cost more than that check."""
    query: bytes = request.scope.get("query_string", b"")
    if query == b"alt=sse" or b"alt" not in query:
        return query == b"alt=sse"
    sse = False
    for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
        if name == "alt":
            if value not in _ALT:
                raise InvalidArgument(f"Expected sse or json, got {shorten(value)!r}", "alt")
            sse = _ALT[value]
    return sse


def _unapplied(state: AppState, model: str, safety: bool) -> list[str]:
    """Safety settings given to a backend that does not apply them (Gemini's does)."""
    if not safety:
        return []
    backend, _ = state.creator.router.resolve(model)
    if getattr(backend, "kind", None) == "gemini":
        return []
    return [f"safetySettings: not applied (the {backend.name} backend has none)"]


async def _count(state: AppState, model: str, body: bytes) -> Response[bytes]:
    strict = state.settings.http.strict_unknown_fields
    request, warnings = decode.read(body, wire.CountTokensRequest, strict=strict)
    inner = request.generate_content_request
    if inner is None:
        if not request.contents:
            raise ApiError(400, "`contents` (or `generateContentRequest.contents`) is required")
        inner = wire.GenerateContentRequest(contents=request.contents)
    # what the turn would be: its system instruction and tools count where the backend counts them
    turn = decode.of_request(inner, model, stream=False, warnings=warnings)
    total, estimated = await count_tokens(state.creator.router, turn.create, turn.steps)
    if estimated:
        warnings.append("totalTokens: this server's estimate (4 characters a token, 258 a media part)")
    return _json(wire.CountTokensResponse(total_tokens=total), warnings)


def _json(value: Any, warnings: list[str]) -> Response[bytes]:
    return Response(
        content=json_encoder.encode(value),
        status_code=200,
        media_type="application/json",
        headers=_warnings_header(warnings),
    )


def _warnings_header(warnings: list[str]) -> dict[str, str]:
    """One header line, in ASCII: a warning may name a field the client sent (any character, a line
    break too), which a header cannot hold as it is."""
    if not warnings:
        return {}
    joined = " | ".join(warnings).encode("ascii", "backslashreplace").decode()
    return {WARNINGS_HEADER: joined.translate(_CONTROLS)}


HANDLERS = [model_method]
