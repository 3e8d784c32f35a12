"""The store's connections end with it."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis
import uvloop
from redis.exceptions import ConnectionError as RedisConnectionError

from server import settings as settings_module
from server.launch.redis_process import RedisProcess
from server.store import connection
from server.store.store import Store


async def test_close_closes_every_connection(private_redis: RedisProcess) -> None:
    observer = aioredis.Redis.from_url(private_redis.url)
    try:
        before = len(await observer.client_list())
        store = await Store.open(settings_module.load({"REDIS_URL": private_redis.url}))
        pools = [store.redis.connection_pool, store.blocking.connection_pool]
        try:
            assert len(await observer.client_list()) > before  # Store.open pinged both clients
            await store.close()
            await asyncio.sleep(0.1)
            assert len(await observer.client_list()) == before
        finally:
            for pool in pools:
                await pool.disconnect()
    finally:
        await observer.aclose()


def test_a_transport_closed_beneath_a_connection_is_a_lost_connection(private_redis: RedisProcess) -> None:
    """A Sentinel failover's demoted primary drops its clients; under uvloop (as the server runs) a write to
    the dropped transport raised RuntimeError through redis-py, a 500. It is a lost connection: redis-py
    retries it on a new one, and a caller without retries sees ConnectionError, an outage."""

    async def scenario() -> None:
        commands, blocking = connection.build(connection.parse(private_redis.url), "queue", None, None)
        try:
            conn = await commands.connection_pool.get_connection()
            await conn.connect()
            conn._writer.transport.close()  # the peer's close, as uvloop sees it
            await asyncio.sleep(0.01)
            with pytest.raises(RedisConnectionError, match="closed the connection"):
                await conn.send_command("PING")
            await commands.connection_pool.release(conn)
            # the command client's next command finds its connection gone and opens another
            assert await commands.ping()
        finally:
            await connection.close(commands, blocking)

    uvloop.run(scenario())
