"""Request ids and the access log: one raw ASGI wrapper around the whole app, router included, so that
every answer (a 404 of the router, an error, an SSE stream) carries `x-request-id` and gets its line.

It wraps `send` and forwards each message at once, counting the body's bytes on the way: a stream is never
held back.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from . import context, metrics, spans
from .access import AccessLog

#: ASGI's callables, loosely typed: an app's own types (litestar's TypedDicts) are narrower than a wrapper
#: that only passes them on needs
Message = MutableMapping[str, Any]
Send = Callable[[Any], Awaitable[None]]
ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]

log = logging.getLogger(__name__)

_HEADER = b"x-request-id"


class RequestObserver:
    """The ASGI app around `app`: gives each HTTP request its id and, with `access`, its access line."""

    __slots__ = ("access", "app")

    def __init__(self, app: ASGIApp, *, access: bool) -> None:
        self.app = app
        #: None: no access log
        self.access = AccessLog() if access else None

    async def __call__(self, scope: Any, receive: Any, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = _incoming_id(scope)
        kept = incoming is not None and context.valid_request_id(incoming)
        request = context.RequestContext(incoming if kept and incoming else context.new_request_id())
        token = context.enter(request)
        if incoming is not None and not kept:
            log.debug("X-Request-Id %r is not 1-128 of A-Z a-z 0-9 . _ : -: replaced", incoming[:64])
        exchange = _Exchange(send, request.request_id.encode())
        # None unless tracing is on: then the request's span is current until it has answered
        span = spans.request_started(scope)
        started = time.perf_counter()
        try:
            await self.app(scope, receive, exchange.send)
        finally:
            context.leave(token)
            seconds = time.perf_counter() - started
            # no status: the app failed before it answered (the server answers 500)
            status = exchange.status or 500
            # litestar's route template, once routed (None: no route matched), bounds the label
            route = scope.get("path_template")
            metrics.observe_request(scope["method"], route, status, seconds)
            if span is not None:
                span.end(route, status, request.request_id, request.interaction_id)
            access = self.access
            if access is not None and access.enabled():
                path = scope.get("raw_path") or scope["path"].encode()
                method, query = scope["method"], scope["query_string"]
                access.add(
                    (time.time(), method, path, query, status, exchange.sent, seconds * 1000.0, request)
                )

    def flush(self) -> None:
        """Write the access lines still waiting (at the app's end)."""
        if self.access is not None:
            self.access.flush()


class _Exchange:
    """The app's `send`, adding the request id to the response's head and counting what was sent."""

    __slots__ = ("_header", "_send", "sent", "status")

    def __init__(self, send: Send, request_id: bytes) -> None:
        self._send = send
        self._header = (_HEADER, request_id)
        self.status: int | None = None
        self.sent = 0

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.body":
            self.sent += len(message.get("body", b""))
        elif kind == "http.response.start":
            self.status = message["status"]
            headers = message.get("headers")
            if isinstance(headers, list):
                headers.append(self._header)
            else:
                message["headers"] = [*(headers or ()), self._header]
        await self._send(message)


def _incoming_id(scope: Message) -> str | None:
    """The client's (or its proxy's) X-Request-Id. An invalid one is replaced, not refused: proxies send
    odd ones, and a request must not fail over a header that only serves the logs."""
    for name, value in scope["headers"]:
        if name == _HEADER:
            text: str = value.decode("latin-1")
            return text
    return None
