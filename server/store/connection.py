"""The two Redis clients of a process, built from one parsed REDIS_URL and both pinged before use.

One client serves commands, scripts, pub/sub and arq's queue; the other holds the connections that block
(XREAD of a followed stream, BLPOP of a cancel acknowledgement), so a thousand followers never starve the
commands. They differ only in pool size and timeouts; everything else comes from the one URL, so TCP, TLS
and unix sockets behave alike. TCP keep-alive (which finds a dead peer behind a blocked read) is a TCP
option: redis-py refuses it on a unix socket, and it is not needed there.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import msgspec
from arq.connections import ArqRedis
from redis.asyncio import BlockingConnectionPool, ConnectionPool, Redis
from redis.exceptions import RedisError

SCHEMES = ("redis", "rediss", "unix")

#: connections that may block at once (followed streams, cancel waits) in one process
_BLOCKING_CONNECTIONS = 2000


class RedisUrlError(ValueError):
    """REDIS_URL cannot be used; the message names the problem."""


class RedisUnavailable(ConnectionError):
    """Redis did not answer at start; the message names where it was looked for."""


class RedisTarget(msgspec.Struct, frozen=True):
    url: str
    unix: bool

    @property
    def shown(self) -> str:
        """The URL with any password replaced, for logs and errors."""
        parts = urlsplit(self.url)
        if parts.password is None:
            return self.url
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
        return urlunsplit(parts._replace(netloc=netloc))


def parse(url: str) -> RedisTarget:
    scheme = urlsplit(url).scheme
    if scheme not in SCHEMES:
        raise RedisUrlError(
            f"REDIS_URL: {url!r} is not a Redis URL (expected redis://host:port/db, rediss://… or "
            "unix:///path/to/redis.sock)"
        )
    if scheme == "unix" and not urlsplit(url).path:
        raise RedisUrlError(f"REDIS_URL: {url!r} names no socket path")
    return RedisTarget(url=url, unix=scheme == "unix")


def _pool_options(target: RedisTarget) -> dict[str, Any]:
    return {} if target.unix else {"socket_keepalive": True}


def build(target: RedisTarget, queue_name: str, serializer: Any, deserializer: Any) -> tuple[ArqRedis, Redis]:
    """(commands client, blocking client); nothing connects until first use: see `ping`."""
    commands = ArqRedis(
        ConnectionPool.from_url(target.url, socket_connect_timeout=2, **_pool_options(target)),
        job_serializer=serializer,
        job_deserializer=deserializer,
        default_queue_name=queue_name,
    )
    blocking = Redis(
        connection_pool=BlockingConnectionPool.from_url(
            target.url,
            max_connections=_BLOCKING_CONNECTIONS,
            timeout=30,
            socket_connect_timeout=2,
            # no read timeout: reads block for a keep-alive interval
            socket_timeout=None,
            **_pool_options(target),
        )
    )
    return commands, blocking


async def ping(target: RedisTarget, *clients: Redis, attempts: int = 10, delay: float = 0.5) -> None:
    """Ping every client, retrying while Redis starts; RedisUnavailable names the URL when it never
    answers. A client whose connections cannot even be built fails here, not on its first request."""
    for attempt in range(attempts):
        try:
            for client in clients:
                async with asyncio.timeout(5):
                    await client.ping()
            return
        except (RedisError, OSError, TimeoutError) as exc:
            if attempt == attempts - 1:
                raise RedisUnavailable(f"Redis at {target.shown} does not answer: {exc}") from exc
            await asyncio.sleep(delay)


async def check(url: str, attempts: int = 3) -> None:
    """Build both clients of `url`, ping them, and close them: a launcher's check before it starts
    anything that would need them. Raises RedisUrlError or RedisUnavailable."""
    target = parse(url)
    clients = build(target, "", None, None)
    try:
        await ping(target, *clients, attempts=attempts)
    finally:
        for client in clients:
            await client.aclose()
