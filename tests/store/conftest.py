"""The store in-process, against the session's private redis-server (tests/conftest.py), flushed per test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from server import settings as settings_module
from server.launch.redis_process import RedisProcess
from server.store.store import Store


@pytest.fixture
async def store(private_redis: RedisProcess) -> AsyncIterator[Store]:
    settings = settings_module.load({"REDIS_URL": private_redis.url})
    opened = await Store.open(settings)
    await opened.redis.flushdb()  # this session's own Redis: used by nothing else now
    try:
        yield opened
    finally:
        await opened.close()
