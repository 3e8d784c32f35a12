"""The store in-process, against a real redis-server of its own (started once, flushed per test)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from server import settings as settings_module
from server.launch.redis_process import RedisProcess, free_port
from server.store.store import Store


@pytest.fixture(scope="session")
def store_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    process = RedisProcess(Path(tmp_path_factory.mktemp("store-redis")), port=free_port(), appendonly=False)
    process.start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
async def store(store_redis: RedisProcess) -> AsyncIterator[Store]:
    settings = settings_module.load({"REDIS_URL": store_redis.url})
    opened = await Store.open(settings)
    await opened.redis.flushdb()  # this test's own Redis: started above, used by nothing else
    try:
        yield opened
    finally:
        await opened.close()
