"""What the store's tests share: a redis-server of one test alone, to freeze, stop, kill or demote."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from server.launch.redis_process import RedisProcess, free_port
from tests.support import start_own_redis


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisProcess]:
    process = start_own_redis(RedisProcess(tmp_path / "redis", port=free_port(), appendonly=False))
    try:
        yield process
    finally:
        process.stop(kill=True)  # SIGKILL ends a frozen (SIGSTOP) one too
