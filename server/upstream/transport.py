"""The one I/O seam of the backends: a pooled HTTP client per backend and a guarded streaming POST.

Everything provider-specific stays in the backend modules; this turns HTTP failures into `UpstreamError`s
that name the backend, and enforces the overall deadline inside the client's own waits (no timer spans the
consumer's awaits, so a deadline never fires inside whatever the consumer is doing).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import math
import os
import time
from collections.abc import AsyncGenerator, Mapping

import msgspec

from ..observability import context, spans
from ..outbound import Outbound
from ..protocol.base import enc_hook
from ..settings import ModelRoute
from . import http1
from .base import UpstreamError, UpstreamEvent, UpstreamRequest
from .stream import StreamDecoder

# the protocol's hook: the Interactions backend sends steps of types this server keeps as they came
_encoder = msgspec.json.Encoder(enc_hook=enc_hook)
ERROR_BODY_LIMIT = 64 * 1024
#: distinct upstream URLs a backend keeps parsed (a Gemini URL names its model, so there are a few)
_MAX_URLS = 256


class UpstreamClient:
    """A backend's HTTP seam: its pool of connections (`upstream/http1/`), the route's timeouts, and the
    process's outbound rules (proxies, trust store; None: the environment's, read now)."""

    def __init__(self, route: ModelRoute, outbound: Outbound | None = None) -> None:
        self.http = http1.Client(max_connections=route.max_connections, outbound=outbound)
        # a short read timeout would kill thinking models that pause before their first token
        self.timeouts = http1.Timeouts(
            connect=route.connect_timeout_seconds, read=route.read_timeout_seconds, pool=5.0
        )
        self._targets: dict[str, http1.Target] = {}

    def target(self, url: str) -> http1.Target:
        parsed = self._targets.get(url)
        if parsed is None:
            if len(self._targets) >= _MAX_URLS:
                self._targets.clear()
            parsed = self._targets[url] = http1.Target.parse(url)
        return parsed

    async def post(
        self, url: str, headers: dict[str, str], body: bytes, deadline: float, method: str = "POST"
    ) -> http1.Response:
        """The response with its body not read yet (close it, or read it to its end); `deadline` is the
        loop time by which the whole call must be over."""
        return await self.http.post(self.target(url), headers, body, self.timeouts, deadline, method)

    async def aclose(self) -> None:
        await self.http.aclose()


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
    body: msgspec.Struct | None,
    *,
    deadline_seconds: float,
    method: str = "POST",
) -> AsyncGenerator[bytes, None]:
    """POST `body` (a provider's wire Struct; or `method` without one, a GET of a remote run) and yield the
    response body as it arrives.

    Closing the generator before the end (the consumer was cancelled: a cancel, a client gone) closes the
    connection, so the upstream sees its client go and stops generating.
    """
    deadline = asyncio.get_running_loop().time() + deadline_seconds
    content, headers = _encoded(body, headers)
    span = _span(client, url)
    if span is not None:
        headers.update(span.headers())
    try:
        response = await client.post(url, headers, content, deadline, method)
        if span is not None:
            span.answered(response.status)
        try:
            if response.status == 407 and (refused := _proxy_refused(client, backend, url, response)):
                raise refused
            if response.status >= 300:
                raw = await response.read(ERROR_BODY_LIMIT)
                message = error_message(raw, response.reason)
                raise UpstreamError(
                    backend, response.status, message, retry_after=retry_after(response.headers, raw)
                )
            while (chunk := await response.chunk()) is not None:
                yield chunk
        finally:
            response.close()
    except http1.DeadlineExceeded:
        _failed(span, "timeout")
        raise UpstreamError(
            backend, 0, f"no answer within the {deadline_seconds:g} s deadline", timeout=True
        ) from None
    except http1.ProxyRefused as exc:
        _failed(span, type(exc).__name__)
        # 4xx: the proxy will not let this server through (credentials, its policy): no retry fixes that
        raise UpstreamError(backend, 0, str(exc), misconfigured=400 <= exc.status < 500) from None
    except http1.HttpError as exc:
        _failed(span, "timeout" if exc.timeout else type(exc).__name__)
        if exc.timeout:
            raise UpstreamError(backend, 0, f"timed out: {exc}", timeout=True) from None
        raise UpstreamError(backend, 0, f"connection failed: {exc}") from None
    finally:
        if span is not None:
            span.end()


def _encoded(body: msgspec.Struct | None, headers: dict[str, str]) -> tuple[bytes, dict[str, str]]:
    """The body's bytes, and the headers with its type and the request's id (which lets the upstream's logs
    be matched with ours)."""
    headers = {**headers, **context.upstream_headers()}
    if body is None:
        return b"", headers
    headers["content-type"] = "application/json"
    return _encoder.encode(body), headers


def _proxy_refused(
    client: UpstreamClient, backend: str, url: str, response: http1.Response
) -> UpstreamError | None:
    """A 407 to a request sent through a proxy in absolute form (an http:// URL) is the proxy's: it wants
    other credentials, which no retry brings."""
    target = client.target(url)
    proxy = client.http.proxy_for(target)
    if proxy is None:
        return None
    message = f"the proxy {proxy.shown} refused the request to {target.authority}: 407 {response.reason}"
    return UpstreamError(backend, 0, message, misconfigured=True)


def _span(client: UpstreamClient, url: str) -> spans.UpstreamSpan | None:
    """The call's span when tracing is on (None at once when off)."""
    if not spans.on():
        return None
    try:
        target = client.target(url)
    except http1.HttpError:
        # a URL the client refuses: its post raises the error, and the run fails with it
        return None
    return spans.upstream_call(target.scheme, target.host, target.port, target.authority, target.path)


def _failed(span: spans.UpstreamSpan | None, error_type: str) -> None:
    if span is not None:
        span.failed(error_type)


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


def retry_after(headers: Mapping[str, str], raw: bytes = b"") -> float | None:
    """Seconds to wait, from `retry-after-ms` (OpenAI's, as the Stainless SDKs read it), `Retry-After`
    (seconds or an HTTP date), either as relayed by a proxy, or else Google's RetryInfo in the body.
    `headers` is looked up by lower-case names (the client keeps them so)."""
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

    def __init__(self, route: ModelRoute, outbound: Outbound | None = None) -> None:
        self.route = route
        self.name = self.kind
        self.base_url = route.base_url or self.default_base_url
        self.client = UpstreamClient(route, outbound)

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
