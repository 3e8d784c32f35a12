"""Upstream connections through an HTTP proxy (`outbound.Proxy`, from HTTPS_PROXY / HTTP_PROXY).

An https:// URL goes in a tunnel: `CONNECT host:port` to the proxy, then TLS to the origin inside it, with
SNI and the certificate checked against the origin's name as without a proxy. An http:// URL's requests go
to the proxy in absolute form (`POST http://host:port/path`, request.py), as curl and httpx send them:
proxies refuse CONNECT to ports other than 443 by default (Squid's `http_access deny CONNECT !SSL_ports`).
Either way a connection carries one origin's requests, so the pool keeps them by origin as it keeps direct
ones.

The answer to CONNECT is read with h11, which knows that a 2xx to a CONNECT ends HTTP on the connection:
the parser of responses (httptools) is not told the request's method, and would wait for a body.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import TypeVar

import h11

from ...outbound import Proxy
from .connection import Connection
from .errors import ConnectFailed, ProxyRefused
from .request import USER_AGENT, Target

P = TypeVar("P", bound=asyncio.BaseProtocol)


async def connect_via(
    loop: asyncio.AbstractEventLoop, proxy: Proxy, target: Target, tls: ssl.SSLContext
) -> Connection:
    """A connection to `target` through `proxy`, ready for requests; the caller bounds the wait."""
    if target.scheme != "https":
        transport, conn = await _open(loop, proxy, lambda: Connection(loop))
        conn.transport = transport
        return conn
    transport, handshake = await _open(loop, proxy, lambda: _Handshake(loop, proxy))
    try:
        await handshake.tunnel(target)
        conn = Connection(loop)
        try:
            tunnelled = await loop.start_tls(transport, conn, tls, server_hostname=target.host)
        except OSError as exc:  # the handshake failed (ssl.SSLError is an OSError), or the tunnel broke
            raise ConnectFailed(
                f"cannot connect to {target.authority} through the proxy {proxy.shown}: {exc}"
            ) from None
    except BaseException:
        transport.abort()
        raise
    if tunnelled is None:
        raise ConnectFailed(
            f"the TLS connection to {target.authority} through the proxy {proxy.shown} closed at once"
        )
    # start_tls does not call connection_made on the protocol it is given
    conn.transport = tunnelled
    return conn


async def _open(
    loop: asyncio.AbstractEventLoop, proxy: Proxy, factory: Callable[[], P]
) -> tuple[asyncio.Transport, P]:
    try:
        return await loop.create_connection(factory, proxy.host, proxy.port)
    except OSError as exc:  # refused, unreachable, a name that does not resolve
        raise ConnectFailed(f"cannot connect to the proxy {proxy.shown}: {exc}") from None


class _Handshake(asyncio.Protocol):
    """The CONNECT exchange on a new connection to the proxy, before TLS to the origin takes it over."""

    def __init__(self, loop: asyncio.AbstractEventLoop, proxy: Proxy) -> None:
        self.proxy = proxy
        self.transport: asyncio.Transport | None = None
        self._h11 = h11.Connection(h11.CLIENT)
        self._answer: asyncio.Future[h11.Response] = loop.create_future()

    async def tunnel(self, target: Target) -> None:
        """Ask for the tunnel; raises ProxyRefused unless the proxy answers 2xx."""
        literal = f"[{target.host}]" if ":" in target.host else target.host
        to = f"{literal}:{target.port}"
        fields = [("Host", to), ("User-Agent", USER_AGENT)]
        if self.proxy.authorization is not None:
            fields.append(("Proxy-Authorization", self.proxy.authorization))
        assert self.transport is not None, "connected"
        self.transport.write(self._h11.send(h11.Request(method="CONNECT", target=to, headers=fields)) or b"")
        answer = await self._answer
        if not 200 <= answer.status_code < 300:
            reason = answer.reason.decode("latin-1")
            raise ProxyRefused(
                f"the proxy {self.proxy.shown} refused the tunnel to {to}: {answer.status_code} {reason}",
                answer.status_code,
            )
        if self._h11.trailing_data[0]:
            # the origin speaks only after our TLS hello: bytes before it are not the origin's
            raise ConnectFailed(f"the proxy {self.proxy.shown} sent bytes after its answer to CONNECT")

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a TCP transport

    def data_received(self, data: bytes) -> None:
        if self._answer.done():
            return
        self._h11.receive_data(data)
        try:
            while (event := self._h11.next_event()) is not h11.NEED_DATA:
                if isinstance(event, h11.Response):  # the final answer (a 1xx is passed over)
                    self._answer.set_result(event)
                    return
        except h11.RemoteProtocolError as exc:
            self._fail(f"the proxy {self.proxy.shown} did not answer the CONNECT in HTTP/1.1: {exc}")

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(f"the proxy {self.proxy.shown} closed the connection before answering the CONNECT")

    def _fail(self, message: str) -> None:
        if not self._answer.done():
            self._answer.set_exception(ConnectFailed(message))
