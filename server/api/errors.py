"""Errors as the API returns them: `{"error": {"code": <HTTP status>, "message": ..., "status": ...,
"details": [{"@type": "type.googleapis.com/google.rpc.RequestInfo", "requestId": ...}]}}`, Google's shape
(the SDKs take the body whole: `details` reaches the caller as part of the error's body).

409 and 5xx are never used for errors a retry cannot fix: the SDK retries those.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
from litestar import Request, Response
from litestar.exceptions import HTTPException

from ..errors import UNAVAILABLE_MESSAGE, OverLimit, RequestError, ServerError, http_status
from ..observability import context, metrics
from ..protocol.codec import json_encoder
from ..store import outage
from ..upstream.base import UpstreamError

log = logging.getLogger(__name__)

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    408: "DEADLINE_EXCEEDED",
    413: "PAYLOAD_TOO_LARGE",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


REQUEST_INFO = "type.googleapis.com/google.rpc.RequestInfo"
QUOTA_FAILURE = "type.googleapis.com/google.rpc.QuotaFailure"
RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"


class RequestInfo(msgspec.Struct, kw_only=True, tag_field="@type", tag=REQUEST_INFO):
    """google.rpc.RequestInfo: the request's id, as in its `x-request-id` header and the logs."""

    request_id: str = msgspec.field(name="requestId")


class QuotaViolation(msgspec.Struct, kw_only=True):
    #: the limit, as `[auth.limits] <name>`
    subject: str
    description: str


class QuotaFailure(msgspec.Struct, kw_only=True, tag_field="@type", tag=QUOTA_FAILURE):
    """google.rpc.QuotaFailure: the limit a 429 RESOURCE_EXHAUSTED reached (server/limits/)."""

    violations: list[QuotaViolation]


class RetryInfo(msgspec.Struct, kw_only=True, tag_field="@type", tag=RETRY_INFO):
    """google.rpc.RetryInfo: when a request would be admitted again (a Duration: "1.250s")."""

    retry_delay: str = msgspec.field(name="retryDelay")


ErrorDetails = RequestInfo | QuotaFailure | RetryInfo


class ErrorDetail(msgspec.Struct, kw_only=True, omit_defaults=True):
    code: int
    message: str
    status: str
    details: list[ErrorDetails] = []


class ErrorBody(msgspec.Struct, kw_only=True):
    error: ErrorDetail


class ApiError(ServerError):
    def __init__(
        self,
        status_code: int,
        message: str,
        headers: dict[str, str] | None = None,
        *,
        status: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message
        self.headers = headers or {}
        self.status = status


def error_response(
    status_code: int,
    message: str,
    headers: dict[str, str] | None = None,
    status: str | None = None,
    details: Sequence[ErrorDetails] = (),
) -> Response[bytes]:
    name = status or _STATUS_NAMES.get(status_code, "UNKNOWN")
    request_id = context.request_id()
    found = [*details, RequestInfo(request_id=request_id)] if request_id is not None else list(details)
    body = ErrorBody(error=ErrorDetail(code=status_code, message=message, status=name, details=found))
    return Response(
        content=json_encoder.encode(body),
        status_code=status_code,
        media_type="application/json",
        headers=headers,
    )


def upstream_error(exc: UpstreamError) -> ApiError:
    """A foreground call's upstream failure, as our reply (issue: 400 stays 400, 429 passes through)."""
    if exc.timeout:
        return ApiError(504, f"The {exc.backend} backend timed out: {exc.message}")
    if exc.status == 429:
        # rounded up: a client that comes back early is refused again
        headers = (
            {"Retry-After": str(max(1, math.ceil(exc.retry_after)))} if exc.retry_after is not None else {}
        )
        return ApiError(429, f"The {exc.backend} backend is rate limited: {exc.message}", headers)
    if exc.misconfigured:
        # nothing was sent: this server is not set up for the route (its key variable is unset)
        return ApiError(
            400, f"The {exc.backend} backend cannot be called: {exc.message}", status="FAILED_PRECONDITION"
        )
    if exc.status in (401, 403):
        # the server's own upstream credentials: not the client's key, and no retry fixes it
        return ApiError(
            400,
            f"The {exc.backend} backend rejected this server's credentials: {exc.message}",
            status="FAILED_PRECONDITION",
        )
    if 400 <= exc.status < 500 and exc.status not in (408, 409):
        code = 413 if exc.status == 413 else 400
        return ApiError(code, f"The {exc.backend} backend refused the request: {exc.message}")
    return ApiError(502, f"The {exc.backend} backend failed: {exc.message}")


class Failure(msgspec.Struct, frozen=True, kw_only=True):
    """An error of a request as every dialect answers it, before its shape: the HTTP status, the message,
    headers (Retry-After), Google's status name where it is not the status code's own, the field at fault."""

    status_code: int
    message: str
    headers: dict[str, str] = {}
    status: str | None = None
    param: str | None = None
    #: the tenant's limit that refused it (server/limits/)
    over: OverLimit | None = None


def describe(request: Request[Any, Any, Any], exc: Exception) -> Failure:
    """Every error of a request (server/errors.py draws the hierarchy), whichever dialect answers it."""
    if isinstance(exc, OverLimit):
        # rounded up: a client that comes back early is refused again
        wait = {"Retry-After": str(max(1, math.ceil(exc.retry_after)))}
        return Failure(status_code=429, message=str(exc), headers=wait, over=exc)
    if isinstance(exc, RequestError):
        return Failure(status_code=http_status(exc), message=str(exc), param=getattr(exc, "field", None))
    if isinstance(exc, UpstreamError):
        exc = upstream_error(exc)
    if isinstance(exc, outage.UNAVAILABLE):
        # Redis is down or hangs (every command is bounded): a retry soon is the fix; the process's
        # background loops log the outage once. Counted under one label: which handler's command failed
        # is in the access log, and a label per route or command would be a series per code path
        metrics.redis_failed("request")
        exc = ApiError(503, UNAVAILABLE_MESSAGE, {"Retry-After": "1"})
    if isinstance(exc, ApiError):
        return Failure(
            status_code=exc.status_code, message=exc.message, headers=exc.headers, status=exc.status
        )
    if isinstance(exc, HTTPException):
        message = (
            exc.detail if exc.status_code != 404 else f"No route for {request.method} {request.url.path}"
        )
        return Failure(status_code=exc.status_code, message=str(message), headers=dict(exc.headers or {}))
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return Failure(status_code=500, message="Internal error")


def handle(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    """Every error of a request as Google's JSON error."""
    failure = describe(request, exc)
    details = _quota_details(failure.over) if failure.over is not None else ()
    return error_response(
        failure.status_code, failure.message, failure.headers or None, failure.status, details
    )


def _quota_details(over: OverLimit) -> tuple[QuotaFailure, RetryInfo]:
    """What Google's API says of a quota a 429 reached: the limit, and when to come back."""
    violation = QuotaViolation(
        subject=f"[auth.limits] {over.limit}", description=f"{over.limit} of this API key: {over.value}"
    )
    return QuotaFailure(violations=[violation]), RetryInfo(retry_delay=f"{over.retry_after:.3f}s")


ExceptionHandler = Callable[[Request[Any, Any, Any], Any], Response[Any]]
EXCEPTION_HANDLERS: dict[int | type[Exception], ExceptionHandler] = {Exception: handle}
