"""The Redis clients of a process, built from a parsed URL (store/redis_urls.py) and pinged before use.

Two per Redis: one serves commands, scripts, pub/sub and arq's queue; the other holds the connections that
block (XREAD of a followed stream, BLPOP of a cancel acknowledgement), so a thousand followers never starve
the commands. They differ only in pool size and timeouts; everything else comes from the one URL, so TCP,
TLS and unix sockets behave alike. TCP keep-alive (which finds a dead peer behind a blocked read) is a TCP
option: redis-py refuses it on a unix socket, and it is not needed there. On a Cluster (store/cluster.py)
the two serve the records only: arq's queue lives on a Redis of its own (REDIS_QUEUE_URL).
"""

from __future__ import annotations

import asyncio
from typing import Any

from arq.connections import ArqRedis
from redis import Redis as SyncRedis
from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.sentinel import Sentinel, SentinelConnectionPool
from redis.exceptions import RedisError
from redis.sentinel import Sentinel as SyncSentinel

from . import cluster
from .redis_urls import RedisTarget, RedisUrlError, SentinelService, parse
from .state_errors import StateParser, lost_transport_reads_as_lost

__all__ = ["RedisTarget", "RedisUnavailable", "RedisUrlError", "build", "build_records", "check", "parse"]

#: connections that may block at once (followed streams, cancel waits) in one process
_BLOCKING_CONNECTIONS = 2000
#: connections for everything else: Redis runs one command at a time, so more only add connects; a burst
#: of a thousand requests opening a thousand sockets overflowed the listen backlog (connects of 1-3 s)
_COMMAND_CONNECTIONS = 128
_QUEUE_SECONDS = 30.0


async def _bounded(client: Redis, bound: float, args: tuple[Any, ...], options: dict[str, Any]) -> Any:
    """One command on a connection of the pool, ended after `bound` seconds of talking to Redis.

    A socket timeout bounds each read, but a command against a frozen Redis also waits on closing the
    broken connection, and the next one on connecting: requests took 2, 4, then 8 s. The time spent
    waiting for a free connection is not counted: that is this process being busy, not Redis (counting it
    turned a burst of a thousand streams into 503s). A command cut off closes its connection, so nothing
    half-read is reused."""
    pool = client.connection_pool
    conn = await pool.get_connection()
    try:
        async with asyncio.timeout(bound):
            return await conn.retry.call_with_retry(
                lambda: client._send_command_parse_response(conn, args[0], *args, **options),  # type: ignore[no-untyped-call]
                lambda error: client._disconnect_raise(conn, error),
            )
    finally:
        await pool.release(conn)


class BoundedRedis(Redis):
    """A client whose every command ends within `bound` seconds of talking to Redis (see _bounded)."""

    bound: float = 2.0

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        return await _bounded(self, self.bound, args, options)


class BoundedArqRedis(ArqRedis):
    """BoundedRedis for the client that also queues arq's jobs."""

    bound: float = 2.0

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        return await _bounded(self, self.bound, args, options)


class RedisUnavailable(ConnectionError):
    """Redis did not answer at start; the message names where it was looked for."""


class SentinelBlockingPool(SentinelConnectionPool, BlockingConnectionPool):
    """redis-py's Sentinel pool (its connections ask the Sentinels where the primary is, and a failover's
    connection errors send them to ask again), waiting for a free connection as our other pools do."""


def _pool(
    target: RedisTarget, size: int, *, wait: float, connect: float, read: float
) -> BlockingConnectionPool:
    if target.sentinel is not None:
        pool = _sentinel_pool(target.sentinel, size, wait=wait, connect=connect, read=read)
    else:
        pool = _url_pool(target, size, wait=wait, connect=connect, read=read)
    # the class from_url or the Sentinel pool chose, made to read a closed transport as a lost connection;
    # connections are made on first use, so every one of the pool's is of it
    pool.connection_class = lost_transport_reads_as_lost(pool.connection_class)
    return pool


def _url_pool(
    target: RedisTarget, size: int, *, wait: float, connect: float, read: float
) -> BlockingConnectionPool:
    return BlockingConnectionPool.from_url(
        target.url,
        max_connections=size,
        timeout=wait,
        socket_connect_timeout=connect,
        socket_timeout=read,
        # CLUSTERDOWN, MASTERDOWN, TRYAGAIN read as outages, not bugs
        parser_class=StateParser,
        # TCP only: redis-py refuses it on a unix socket
        **({} if target.unix else {"socket_keepalive": True}),
    )


def _sentinel_pool(
    service: SentinelService, size: int, *, wait: float, connect: float, read: float
) -> BlockingConnectionPool:
    timeouts = {"socket_timeout": connect, "socket_connect_timeout": connect}
    # redis-py leaves its Sentinel classes untyped
    manager = Sentinel(list(service.sentinels), sentinel_kwargs=timeouts, **timeouts)  # type: ignore[no-untyped-call]
    return SentinelBlockingPool(  # type: ignore[no-untyped-call]
        service.service,
        manager,
        max_connections=size,
        timeout=wait,
        socket_connect_timeout=connect,
        socket_timeout=read,
        socket_keepalive=True,
        parser_class=StateParser,
        db=service.db,
        password=service.password,
    )


def build(
    target: RedisTarget,
    queue_name: str,
    serializer: Any,
    deserializer: Any,
    *,
    timeout: float = 2.0,
    longest_block: float = 0.0,
) -> tuple[ArqRedis, Redis]:
    """(commands client, blocking client) of one Redis or Sentinel service, the commands client also
    arq's; nothing connects until first use: see `ping`.

    Every command is bounded by `timeout` (a hung Redis is an error, not a hang); the blocking client's
    reads may block for up to `longest_block` more."""
    commands = BoundedArqRedis(
        # waiting for a free connection is this process's own queue under a burst (each command holding
        # one is bounded), so it may take longer than a command
        _pool(target, _COMMAND_CONNECTIONS, wait=_QUEUE_SECONDS, connect=timeout, read=timeout),
        job_serializer=serializer,
        job_deserializer=deserializer,
        default_queue_name=queue_name,
    )
    commands.bound = timeout
    read = longest_block + timeout
    blocking = BoundedRedis(
        connection_pool=_pool(target, _BLOCKING_CONNECTIONS, wait=timeout, connect=timeout, read=read)
    )
    blocking.bound = read
    return commands, blocking


def build_records(
    target: RedisTarget, *, timeout: float = 2.0, longest_block: float = 0.0
) -> tuple[Redis, Redis] | None:
    """(commands client, blocking client) of a Cluster URL, as `build` makes them (None for any other:
    `build`'s clients serve the records then)."""
    if target.cluster is None:
        return None
    read = longest_block + timeout
    return (
        cluster.build(
            target.cluster, size=_COMMAND_CONNECTIONS, connect=timeout, read=timeout, bound=timeout
        ),
        cluster.build(target.cluster, size=_BLOCKING_CONNECTIONS, connect=timeout, read=read, bound=read),
    )


def sync_client(url: str, timeout: float) -> SyncRedis:
    """A blocking client of `url` (a Sentinel URL's follows the primary), for a thread of its own."""
    service = parse(url).sentinel
    if service is None:
        return SyncRedis.from_url(url, socket_timeout=timeout)
    manager = SyncSentinel(list(service.sentinels), socket_timeout=timeout)  # type: ignore[no-untyped-call]
    client: SyncRedis = manager.master_for(  # type: ignore[no-untyped-call]
        service.service, socket_timeout=timeout, db=service.db, password=service.password
    )
    return client


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


async def check(url: str, variable: str = "REDIS_URL", attempts: int = 3) -> None:
    """Build both clients of `url`, ping them, and close them: a launcher's check before it starts
    anything that would need them. Raises RedisUrlError or RedisUnavailable."""
    target = parse(url, variable)
    clients = build_records(target) or build(target, "", None, None)
    try:
        await ping(target, *clients, attempts=attempts)
    finally:
        await close(*clients)


async def close(*clients: Redis) -> None:
    """Close clients and their pools: a client given a pool of its own (as `build` makes them) leaves
    the pool open on `aclose`, and its connections would stay until collected. (A Cluster client closes
    its nodes' connections itself.)"""
    for client in clients:
        await client.aclose()
        pool = getattr(client, "connection_pool", None)
        if pool is not None:
            await pool.disconnect()
