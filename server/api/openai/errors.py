"""Errors in OpenAI's envelope: `{"error": {"message", "type", "param", "code"}}`, with the HTTP status the
Google dialect answers for the same failure (api/errors.py decides both: one list of what went wrong)."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Response, Router
from litestar.types import ControllerRouterHandler

from ...protocol.codec import json_encoder
from ..errors import describe

#: OpenAI's `type` by status; anything else a client caused is an invalid request
_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    429: "rate_limit_error",
}
#: OpenAI's `code` where it has one clients test for
_CODES = {401: "invalid_api_key", 429: "rate_limit_exceeded"}


class OpenAIError(msgspec.Struct, kw_only=True):
    message: str
    type: str
    param: str | None = None
    code: str | None = None


class OpenAIErrorBody(msgspec.Struct, kw_only=True):
    error: OpenAIError


def error_type(status_code: int) -> str:
    if status_code >= 500:
        return "server_error"
    return _TYPES.get(status_code, "invalid_request_error")


def error_body(status_code: int, message: str, param: str | None = None) -> OpenAIErrorBody:
    return OpenAIErrorBody(
        error=OpenAIError(
            message=message, type=error_type(status_code), param=param, code=_CODES.get(status_code)
        )
    )


def handle(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    failure = describe(request, exc)
    body = error_body(failure.status_code, failure.message, failure.param)
    if failure.over is not None and failure.over.limit == "tokens_per_day":
        # OpenAI's word for a quota used up until later (its rate limits are rate_limit_exceeded)
        body.error.code = body.error.type = "insufficient_quota"
    return Response(
        content=json_encoder.encode(body),
        status_code=failure.status_code,
        media_type="application/json",
        headers=failure.headers or None,
    )


def router(handlers: list[ControllerRouterHandler]) -> Router:
    """`handlers` (each with its paths under paths.BASES), whose errors are answered in OpenAI's envelope."""
    return Router(path="/", route_handlers=handlers, exception_handlers={Exception: handle})
