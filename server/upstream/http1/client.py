"""The pool of one backend's upstream connections, and the POST whose response it streams back."""

from __future__ import annotations

import asyncio

from ...outbound import Outbound, Proxy
from .connection import Connection
from .encoding import BodyDecoder, decoder_for
from .errors import (
    ConnectFailed,
    ConnectionBroken,
    ConnectTimedOut,
    DeadlineExceeded,
    PoolTimedOut,
    ReadTimedOut,
)
from .proxy import connect_via
from .request import Target, Timeouts, request_head


class Response:
    """A response whose body is read chunk by chunk. `close()` it: read to its end, its connection goes
    back to the pool; closed before, the connection is closed, which tells the upstream to stop."""

    def __init__(
        self,
        client: Client,
        conn: Connection,
        decoder: BodyDecoder | None,
        timeouts: Timeouts,
        deadline: float,
    ) -> None:
        self._client = client
        self._conn: Connection | None = conn
        self._decoder = decoder
        self._read = timeouts.read
        self._deadline = deadline
        self.status = conn.status
        self.reason = conn.reason
        self.headers = conn.headers

    async def chunk(self) -> bytes | None:
        """The next piece of the body (decoded if it was compressed), or None at its end."""
        conn = self._conn
        if conn is None:
            return None
        until = _until(conn.loop, self._read, self._deadline)
        try:
            chunk = await conn.chunk(until)
        except ReadTimedOut as exc:
            raise _which(exc, until, self._deadline) from None
        decoder = self._decoder
        if decoder is None:
            return chunk
        if chunk is None:
            self._decoder = None
            return decoder.finish() or None
        return decoder.decode(chunk)

    async def read(self, limit: int) -> bytes:
        """At most `limit` bytes of the body (an error's), then the response is closed."""
        body = b""
        try:
            while len(body) < limit and (chunk := await self.chunk()) is not None:
                body += chunk
        finally:
            self.close()
        return body[:limit]

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._client.release(conn)


def _until(loop: asyncio.AbstractEventLoop, read: float, deadline: float) -> float:
    return min(loop.time() + read, deadline)


def _which(timeout: ReadTimedOut, until: float, deadline: float) -> ReadTimedOut | DeadlineExceeded:
    """A wait bounded by both the read timeout and the call's deadline ran out: which of the two it was."""
    return DeadlineExceeded("the call's deadline passed") if until >= deadline else timeout


class Client:
    """One backend's connections: at most `max_connections` in use at once; idle ones are kept for
    `keepalive_seconds` and reused newest first (the warmest, and the least likely to have been closed by
    the upstream's own idle timeout). `outbound`: the proxies and trust store of the process (None: the
    environment's, read now)."""

    def __init__(
        self,
        *,
        max_connections: int,
        keepalive_seconds: float = 30.0,
        max_idle: int = 100,
        outbound: Outbound | None = None,
    ) -> None:
        self.outbound = outbound if outbound is not None else Outbound.from_environment()
        self.keepalive_seconds = keepalive_seconds
        #: idle connections kept per origin: after a burst (10,000 streams ending together) the rest close
        self.max_idle = max_idle
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: dict[tuple[str, str, int], list[Connection]] = {}
        self._busy: set[Connection] = set()
        #: origin -> the proxy its connections go through (None: direct), decided once per origin
        self._proxies: dict[tuple[str, str, int], Proxy | None] = {}
        self._closed = False
        self._sweep: asyncio.TimerHandle | None = None

    async def post(
        self,
        target: Target,
        headers: dict[str, str],
        body: bytes,
        timeouts: Timeouts,
        deadline: float,
        method: str = "POST",
    ) -> Response:
        """Send the POST (or `method`) and wait for the response's head (`deadline`: the loop time the call
        ends by)."""
        loop = asyncio.get_running_loop()
        proxy = self.proxy_for(target)
        data = request_head(target, headers, len(body), proxy, method) + body
        await self._take_slot(timeouts.pool)
        try:
            conn = await self._send(loop, target, proxy, data, timeouts, deadline)
        except BaseException:
            self._slots.release()
            raise
        try:
            decoder = decoder_for(conn.headers.get("content-encoding", ""))
        except ConnectionBroken:
            self._discard(conn)
            self._slots.release()
            raise
        return Response(self, conn, decoder, timeouts, deadline)

    async def _send(
        self,
        loop: asyncio.AbstractEventLoop,
        target: Target,
        proxy: Proxy | None,
        data: bytes,
        timeouts: Timeouts,
        deadline: float,
    ) -> Connection:
        """On a kept connection if there is one, else a new one. A kept connection that breaks before any
        byte of the answer was closed by the upstream as we picked it (its idle timeout raced our request,
        so the request went unread): the request goes once more, on a new connection."""
        conn = self._kept(target.origin, loop.time())
        while True:
            reused = conn is not None
            if conn is None:
                conn = await self._connect(loop, target, proxy, timeouts.connect)
            conn.reset()
            self._busy.add(conn)
            try:
                conn.send(data)
                until = _until(loop, timeouts.read, deadline)
                try:
                    await conn.head(until)
                except ReadTimedOut as exc:
                    raise _which(exc, until, deadline) from None
                return conn
            except ConnectionBroken:
                self._discard(conn)
                if not reused or conn.received:
                    raise
                conn = None
            except BaseException:
                self._discard(conn)
                raise

    def release(self, conn: Connection) -> None:
        """A response is done with its connection: kept if it can carry another request, else closed."""
        self._busy.discard(conn)
        self._slots.release()
        if self._closed or not conn.reusable():
            conn.close()
            return
        idle = self._idle.setdefault(conn.origin, [])
        if len(idle) >= self.max_idle:
            conn.close()
            return
        conn.idle_since = conn.loop.time()
        idle.append(conn)
        if self._sweep is None:
            self._sweep = conn.loop.call_later(self.keepalive_seconds, self._close_expired, conn.loop)

    def _close_expired(self, loop: asyncio.AbstractEventLoop) -> None:
        """Idle connections past their keep-alive are closed, rather than held until the next request."""
        self._sweep = None
        now = loop.time()
        for origin, idle in list(self._idle.items()):
            kept = [
                conn for conn in idle if not conn.closed and now - conn.idle_since < self.keepalive_seconds
            ]
            for conn in idle:
                if conn not in kept:
                    conn.close()
            if kept:
                self._idle[origin] = kept
            else:
                del self._idle[origin]
        if self._idle and not self._closed:
            self._sweep = loop.call_later(self.keepalive_seconds / 2, self._close_expired, loop)

    async def aclose(self) -> None:
        self._closed = True
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()
        for conn in list(self._busy):
            conn.close()

    def _kept(self, origin: tuple[str, str, int], now: float) -> Connection | None:
        idle = self._idle.get(origin)
        while idle:
            conn = idle.pop()
            if not conn.closed and now - conn.idle_since < self.keepalive_seconds:
                return conn
            conn.close()
        return None

    def _discard(self, conn: Connection) -> None:
        self._busy.discard(conn)
        conn.close()

    async def _take_slot(self, wait: float) -> None:
        if not self._slots.locked():
            await self._slots.acquire()  # a free slot: taken without waiting
            return
        try:
            async with asyncio.timeout(wait):
                await self._slots.acquire()
        except TimeoutError:
            raise PoolTimedOut(f"every connection of this route stayed busy for {wait:g} s") from None

    def proxy_for(self, target: Target) -> Proxy | None:
        """The proxy `target`'s connections go through, or None (the outbound rules, looked up once)."""
        origin = target.origin
        if origin not in self._proxies:
            self._proxies[origin] = self.outbound.proxy_for(*origin)
        return self._proxies[origin]

    async def _connect(
        self, loop: asyncio.AbstractEventLoop, target: Target, proxy: Proxy | None, within: float
    ) -> Connection:
        """A new connection to `target` (through `proxy`, when there is one) within `within` s."""
        try:
            async with asyncio.timeout(within):
                if proxy is not None:
                    conn = await connect_via(loop, proxy, target, self.outbound.tls)
                else:
                    conn = await self._direct(loop, target)
        except TimeoutError:
            through = f" through the proxy {proxy.shown}" if proxy is not None else ""
            raise ConnectTimedOut(
                f"no connection to {target.authority}{through} within {within:g} s"
            ) from None
        conn.origin = target.origin
        return conn

    async def _direct(self, loop: asyncio.AbstractEventLoop, target: Target) -> Connection:
        tls = self.outbound.tls if target.scheme == "https" else None
        try:
            transport, conn = await loop.create_connection(
                lambda: Connection(loop),
                target.host,
                target.port,
                ssl=tls,
                server_hostname=target.host if tls is not None else None,
            )
        except OSError as exc:  # refused, unreachable, a name that does not resolve, a failed TLS handshake
            raise ConnectFailed(f"cannot connect to {target.authority}: {exc}") from None
        # uvloop may call connection_made after create_connection returns
        conn.transport = transport
        return conn
