"""What a log line says about the request it belongs to: its request id, tenant and interaction.

One mutable `RequestContext` per request, held in a contextvar. Mutable, so that what a handler learns
(the tenant, once auth resolved it; the interaction's id) is seen by code that runs in tasks the request
started (litestar streams a response from a task of its own, and a task copies the context when it is
created, not afterwards) and by the access log line written once the app has answered.
"""

from __future__ import annotations

import base64
import contextvars
import os
import re


class RequestContext:
    __slots__ = ("interaction_id", "request_id", "tenant")

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        #: the tenant's id as the store knows it (a digest of the key in "open" mode): never the key
        self.tenant: str | None = None
        self.interaction_id: str | None = None


_current: contextvars.ContextVar[RequestContext | None] = contextvars.ContextVar("ix_request", default=None)

#: what an incoming X-Request-Id may be: a proxy's id is kept when it fits in a log line and a header as is
_VALID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def valid_request_id(value: str) -> bool:
    return _VALID.fullmatch(value) is not None


class _RequestIds:
    """16 URL-safe characters (96 random bits) each, cut from random bytes read and encoded 256 ids at a
    time: a getrandom call and an encoding per request would be a tenth of the request id's cost."""

    _IDS = 256

    def __init__(self) -> None:
        self._block = ""
        self._at = 0
        # a forked web process must not hand out its parent's ids
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._block, self._at = "", 0

    def __call__(self) -> str:
        if self._at >= len(self._block):
            # 12 bytes are 16 characters of base64 exactly: the cuts fall on whole ids
            self._block, self._at = base64.urlsafe_b64encode(os.urandom(12 * self._IDS)).decode(), 0
        at = self._at
        self._at = at + 16
        return self._block[at : at + 16]


new_request_id = _RequestIds()


def enter(context: RequestContext) -> contextvars.Token[RequestContext | None]:
    return _current.set(context)


def leave(token: contextvars.Token[RequestContext | None]) -> None:
    _current.reset(token)


def current() -> RequestContext | None:
    return _current.get()


def request_id() -> str | None:
    context = _current.get()
    return context.request_id if context is not None else None


def set_tenant(tenant: str) -> None:
    context = _current.get()
    if context is not None:
        context.tenant = tenant


def set_interaction(interaction_id: str) -> None:
    context = _current.get()
    if context is not None:
        context.interaction_id = interaction_id


def upstream_headers() -> dict[str, str]:
    """The headers that carry this request's id to the upstream (none outside a request)."""
    context = _current.get()
    return {"x-request-id": context.request_id} if context is not None else {}
