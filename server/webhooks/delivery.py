"""One webhook delivery attempt: a POST to a checked URI, and what came of it as a record.

The request is a POST of the event's JSON (`Content-Type: application/json`) to one of the addresses the
URI was checked at (`addresses.CheckedUri`), never to a fresh DNS answer, with the URI's host in the Host
header and, over https, in SNI and the certificate check. One timeout covers connecting, sending and the
response's head; redirects are not followed (a receiver that moved must be updated, and following one
would reach an address nobody checked); the response body is not wanted: at most `BODY_LIMIT` bytes of
it are read, for a clean close, then the connection is closed.

Through a proxy (`outbound.Outbound`: HTTPS_PROXY / HTTP_PROXY, unless NO_PROXY covers the host) the proxy
connects, not this server: the URI and its addresses are checked as always, then the request goes to the
proxy under the URI's host name (a CONNECT tunnel for https, absolute form for http), and connecting to
the checked addresses is the proxy's to do. A proxy that resolves the name again may get another answer;
an operator who routes deliveries through one relies on its own rules for what it may reach (README).

httpx rather than our own client (`upstream/http1/`): ours connects to the host it names, while httpx can
connect to an address and name a host (its `sni_hostname` extension) as it is, and a delivery does not need
the upstream path's speed. Each attempt has its own client, closed with it: receivers are many and cold, so
nothing is pooled.
"""

from __future__ import annotations

import asyncio
import errno
import ssl
import time
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime

import httpx
import msgspec

from ..outbound import Outbound, Proxy
from .addresses import (
    STRICT,
    AllowList,
    CheckedUri,
    HostNotResolved,
    Resolver,
    UriRefused,
    check_uri,
    system_resolver,
)

USER_AGENT = "interaction-server-webhooks"
CONTENT_TYPE = "application/json"
TIMEOUT_SECONDS = 10.0
#: the most of a response body read (then the connection is closed), and the longest wait for it
BODY_LIMIT = 4096
BODY_WAIT_SECONDS = 1.0


class Attempt(msgspec.Struct, frozen=True, kw_only=True):
    """What one delivery attempt came to, as the last deliveries of a webhook record it."""

    #: when the attempt started
    time: datetime
    #: the receiver's status code, None when no response head arrived
    status_code: int | None
    #: from the start to the response's head (or to the failure)
    latency_ms: float
    #: None when delivered, else short: "timeout", "connection refused", "redirect 302", "status 500"...
    error: str | None
    #: a 2xx: the event is delivered and not retried
    delivered: bool


async def deliver(
    uri: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    allow: AllowList = STRICT,
    resolver: Resolver = system_resolver,
    timeout_seconds: float = TIMEOUT_SECONDS,
    outbound: Outbound | None = None,
) -> Attempt:
    """Check the URI again (DNS may have changed since the webhook was saved), then attempt the POST. A
    refused or unresolvable URI is a failed attempt, not an exception. `outbound`: the process's proxies
    and trust store (None: the environment's, read now)."""
    started, clock = datetime.now(UTC), time.perf_counter()
    try:
        checked = await check_uri(uri, allow, resolver)
    except HostNotResolved as exc:
        return _failed(started, clock, f"dns: {exc.reason}")
    except UriRefused as exc:
        return _failed(started, clock, f"refused: {exc.reason}")
    return await attempt(checked, headers, body, timeout_seconds=timeout_seconds, outbound=outbound)


async def attempt(
    checked: CheckedUri,
    headers: Mapping[str, str],
    body: bytes,
    *,
    timeout_seconds: float = TIMEOUT_SECONDS,
    outbound: Outbound | None = None,
) -> Attempt:
    """POST `body` with `headers` to the checked URI, directly or through the proxy `outbound` names."""
    started, clock = datetime.now(UTC), time.perf_counter()
    outbound = outbound if outbound is not None else Outbound.from_environment()
    proxy = outbound.proxy_for(checked.scheme, checked.host, checked.port)
    async with _client(checked, outbound, proxy, timeout_seconds) as client:
        try:
            async with asyncio.timeout(timeout_seconds):
                response = await _send(client, checked, headers, body, pinned=proxy is None)
        except (TimeoutError, httpx.TimeoutException):
            return _failed(started, clock, "timeout")
        except httpx.HTTPError as exc:
            return _failed(started, clock, describe(exc))
        latency = _ms(clock)
        try:
            await _drain(response)
        finally:
            await response.aclose()
    status = response.status_code
    return Attempt(
        time=started, status_code=status, latency_ms=latency, error=_status_error(status),
        delivered=200 <= status < 300,
    )  # fmt: skip


def _client(
    checked: CheckedUri, outbound: Outbound, proxy: Proxy | None, timeout: float
) -> httpx.AsyncClient:
    transport = httpx.AsyncHTTPTransport(
        verify=outbound.tls_for(checked.scheme),
        trust_env=False,
        proxy=None if proxy is None else httpx.Proxy(proxy.url),
    )
    # trust_env off: the proxy is the outbound rules' choice, never httpx's own reading of the environment
    return httpx.AsyncClient(
        transport=transport, trust_env=False, follow_redirects=False, timeout=httpx.Timeout(timeout)
    )


async def _send(
    client: httpx.AsyncClient, checked: CheckedUri, headers: Mapping[str, str], body: bytes, *, pinned: bool
) -> httpx.Response:
    """The response's head from the first checked address that takes the connection (`pinned`), or from
    the URI's host through the proxy."""
    # the body is always JSON (events.py), and receivers select on saying so: Express's
    # `express.raw({type: "application/json"})` of the public guides leaves a body without it unread
    fields = {"user-agent": USER_AGENT, "accept-encoding": "identity", "content-type": CONTENT_TYPE}
    fields.update((name.lower(), value) for name, value in headers.items())
    fields["host"] = checked.authority
    if not pinned:
        request = client.build_request("POST", checked.url_for(checked.host), headers=fields, content=body)
        return await client.send(request, stream=True)
    # over https, the certificate is checked against this name, not against the address connected to
    extensions = {"sni_hostname": checked.host}
    failure: httpx.ConnectError | None = None
    for address in checked.addresses:
        request = client.build_request(
            "POST", checked.url_for(address), headers=fields, content=body, extensions=extensions
        )
        try:
            return await client.send(request, stream=True)
        except httpx.ConnectError as exc:
            failure = exc  # the next address may answer (a host with both IPv4 and IPv6)
    assert failure is not None, "a checked URI has at least one address"
    raise failure


async def _drain(response: httpx.Response) -> None:
    """Read a little of the body, so that a short one ends the exchange cleanly; the rest is never read."""
    read = 0
    try:
        async with asyncio.timeout(BODY_WAIT_SECONDS):
            async for piece in response.aiter_raw(BODY_LIMIT):
                read += len(piece)
                if read >= BODY_LIMIT:
                    return
    except (TimeoutError, httpx.HTTPError):
        return  # the status decides the outcome; a body that stalls or breaks does not change it


def _status_error(status: int) -> str | None:
    if 200 <= status < 300:
        return None
    if 300 <= status < 400:
        return f"redirect {status}"
    return f"status {status}"


def describe(exc: BaseException) -> str:
    """A failure before any response, in a few words, from the OS or TLS error underneath httpx's."""
    for cause in _causes(exc):
        if isinstance(cause, ssl.SSLCertVerificationError):
            return f"tls: {cause.verify_message or 'certificate not trusted'}"
        if isinstance(cause, ssl.SSLError):
            return "tls: handshake failed"
        if isinstance(cause, OSError) and cause.errno in _ERRNO_WORDS:
            return _ERRNO_WORDS[cause.errno]
    if isinstance(exc, httpx.ProxyError):
        # its answer to CONNECT ("407 Proxy Authentication Required"); the proxy's address stays unsaid,
        # as the tenant who reads the deliveries need not learn this server's network
        return f"proxy refused: {exc}"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "closed without a valid response"
    if isinstance(exc, httpx.ConnectError):
        return "connection failed"
    return "request failed"


_ERRNO_WORDS = {
    errno.ECONNREFUSED: "connection refused",
    errno.ECONNRESET: "connection reset",
    errno.EHOSTUNREACH: "host unreachable",
    errno.ENETUNREACH: "network unreachable",
}


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """The exception, what it was raised from, and (anyio's) exception groups' members, depth first."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, BaseExceptionGroup):
            stack.extend(reversed(current.exceptions))
        for linked in (current.__context__, current.__cause__):
            if linked is not None:
                stack.append(linked)


def unsent(error: str) -> Attempt:
    """An attempt that could not be made (nothing was sent), as a failed one."""
    return _failed(datetime.now(UTC), time.perf_counter(), error)


def _failed(started: datetime, clock: float, error: str) -> Attempt:
    return Attempt(time=started, status_code=None, latency_ms=_ms(clock), error=error, delivered=False)


def _ms(clock: float) -> float:
    return round((time.perf_counter() - clock) * 1000.0, 3)
