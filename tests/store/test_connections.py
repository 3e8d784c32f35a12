"""The store's connections end with it."""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis

from server import settings as settings_module
from server.launch.redis_process import RedisProcess
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
