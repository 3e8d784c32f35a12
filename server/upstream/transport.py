"""The one I/O seam of the backends: a pooled transport per backend and a guarded streaming POST.

Everything provider-specific stays in the backend modules; this turns httpx failures into `UpstreamError`s
that name the backend, and enforces the overall deadline without spanning the consumer's own awaits.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import math
import os
import time
from collections.abc import AsyncGenerator

import httpx
import msgspec

from ..settings import ModelRoute
from .aiohttp_transport import AiohttpTransport
from .base import UpstreamError, UpstreamEvent, UpstreamRequest
from .stream import StreamDecoder

_encoder = msgspec.json.Encoder()
ERROR_BODY_LIMIT = 64 * 1024
#: distinct upstream URLs a backend keeps parsed (a Gemini URL names its model, so there are a few)
_MAX_URLS = 256


class UpstreamClient:
    """A backend's HTTP seam: an httpx transport (aiohttp's engine by default; `httpx.MockTransport` in a
    test), called directly with the route's timeouts. httpx's client layer (auth, redirects, cookies) is
    left out: nothing here uses it, and it cost a fifth of a call's CPU."""

    def __init__(self, route: ModelRoute, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.transport = transport or AiohttpTransport(max_connections=route.max_connections)
        # a default 5 s read timeout would kill thinking models that pause before their first token
        self.timeout = {
            "connect": route.connect_timeout_seconds,
            "read": route.read_timeout_seconds,
            "write": 10.0,
            "pool": 5.0,
        }

        #: parsed URLs: httpx parses a URL string in pure Python, which cost more than the request's send
        self._urls: dict[str, httpx.URL] = {}

    def request(self, url: str, headers: dict[str, str], content: bytes) -> httpx.Request:
        parsed = self._urls.get(url)
        if parsed is None:
            if len(self._urls) >= _MAX_URLS:
                self._urls.clear()
            parsed = self._urls[url] = httpx.URL(url)
        return httpx.Request("POST", parsed, headers=headers, content=content)

    async def send(self, request: httpx.Request) -> httpx.Response:
        """The response with its body not read yet (close it, or read it to its end)."""
        request.extensions["timeout"] = self.timeout
        return await self.transport.handle_async_request(request)

    async def aclose(self) -> None:
        await self.transport.aclose()


def api_key(route: ModelRoute) -> str | None:
    """Read at call time so a rotated key is picked up; never logged."""
    if not route.api_key_env:
        return None
    return os.environ.get(route.api_key_env) or None


def join_url(base_url: str, path: str) -> str:
    """`path` starts with its version ("/v1/..."); a base URL that already ends in it is not doubled."""
    base = base_url.rstrip("/")
    version = "/" + path.lstrip("/").split("/", 1)[0]
    if base.endswith(version):
        base = base[: -len(version)]
    return base + path


async def post_stream(
    client: UpstreamClient,
    backend: str,
    url: str,
    headers: dict[str, str],
    body: msgspec.Struct,
    *,
    deadline_seconds: float,
) -> AsyncGenerator[bytes, None]:
    """POST `body` (a provider's wire Struct) and yield the response body as it arrives.

    The deadline is checked around each of our own awaits only: an `asyncio.timeout` held across `yield`
    would fire inside whatever the consumer is doing and look like a cancellation of it. Cancelling the
    consumer while it waits on this generator exits `client.stream`, which closes the connection.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + deadline_seconds
    request = client.request(url, {**headers, "content-type": "application/json"}, _encoder.encode(body))
    try:
        async with contextlib.AsyncExitStack() as stack:
            async with asyncio.timeout_at(deadline):
                response = await client.send(request)
                stack.push_async_callback(response.aclose)
                if response.status_code >= 300:
                    raw = await _read_limited(response)
                    raise UpstreamError(
                        backend,
                        response.status_code,
                        error_message(raw, response.reason_phrase),
                        retry_after=retry_after(response.headers, raw),
                    )
            chunks = response.aiter_bytes()
            while True:
                try:
                    async with asyncio.timeout_at(deadline):
                        chunk = await anext(chunks)
                except StopAsyncIteration:
                    return
                yield chunk
    except TimeoutError:
        raise UpstreamError(
            backend, 0, f"no answer within the {deadline_seconds:g} s deadline", timeout=True
        ) from None
    except httpx.TimeoutException as exc:
        raise UpstreamError(backend, 0, f"timed out ({type(exc).__name__})", timeout=True) from None
    except httpx.TransportError as exc:
        raise UpstreamError(backend, 0, f"connection failed: {type(exc).__name__}: {exc}") from None


async def _read_limited(response: httpx.Response) -> bytes:
    body = b""
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= ERROR_BODY_LIMIT:
            break
    return body[:ERROR_BODY_LIMIT]


def error_message(raw: bytes, fallback: str = "") -> str:
    """The human message of an error body in any of the providers' shapes, else its text."""
    try:
        body = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        text = raw.decode("utf-8", "replace").strip()
        return text[:500] or fallback or "no error message"
    if isinstance(body, list) and body:  # Gemini without alt=sse wraps errors in an array
        body = body[0]
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            message = error.get("message") or error.get("detail")
            if isinstance(message, str) and message:
                return message
        if isinstance(error, str) and error:
            return error
        detail = body.get("detail") or body.get("message")
        if isinstance(detail, str) and detail:
            return detail
    return raw.decode("utf-8", "replace")[:500] or fallback


# Proxies in front of a provider pass its wait on under other names: LiteLLM forwards every provider
# header with this prefix (`llm_provider-retry-after`), beside whatever it sets itself. The
# `x-ratelimit-reset-*` family is not read: OpenAI's says when a limit is fully replenished (a duration such
# as "6m0s"), not when one more request may go, and other services send epoch times under the same names.
_PROXY_PREFIXES = ("", "llm_provider-")


def retry_after(headers: httpx.Headers, raw: bytes = b"") -> float | None:
    """Seconds to wait, from `retry-after-ms` (OpenAI's, as the Stainless SDKs read it), `Retry-After`
    (seconds or an HTTP date), either as relayed by a proxy, or else Google's RetryInfo in the body."""
    for prefix in _PROXY_PREFIXES:
        milliseconds = _number(headers.get(prefix + "retry-after-ms"))
        if milliseconds is not None:
            return milliseconds / 1000.0
        seconds = _seconds_or_date(headers.get(prefix + "retry-after"))
        if seconds is not None:
            return seconds
    return _google_retry_delay(raw)


def _number(value: str | None) -> float | None:
    """A non-negative finite number (a negative one is "now"); None for anything else."""
    if not value:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return max(number, 0.0) if math.isfinite(number) else None


def _seconds_or_date(value: str | None) -> float | None:
    seconds = _number(value)
    if seconds is not None or not value:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def _google_retry_delay(raw: bytes) -> float | None:
    if b"RetryInfo" not in raw:
        return None
    try:
        body = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else []:
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            with contextlib.suppress(ValueError):
                return float(delay[:-1])
    return None


class HTTPBackend:
    """What the three HTTP backends share: one pooled client, the route, and the streaming loop."""

    kind = "http"
    default_base_url = ""

    def __init__(self, route: ModelRoute, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.route = route
        self.name = self.kind
        self.base_url = route.base_url or self.default_base_url
        self.client = UpstreamClient(route, transport)

    async def aclose(self) -> None:
        await self.client.aclose()

    async def _run(
        self, url: str, headers: dict[str, str], body: msgspec.Struct, decoder: StreamDecoder
    ) -> AsyncGenerator[UpstreamEvent, None]:
        chunks = post_stream(
            self.client, self.name, url, headers, body, deadline_seconds=self.route.deadline_seconds
        )
        async with contextlib.aclosing(chunks):
            async for chunk in chunks:
                for event in decoder.feed_bytes(chunk):
                    yield event
        for event in decoder.close():
            yield event

    def upstream_model(self, request: UpstreamRequest) -> str:
        return request.upstream_model or self.route.upstream_model or request.model
