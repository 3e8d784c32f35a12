"""store/replica_acks.py against a real redis-server with no replica: a script is sent with its WAIT in one
round trip, loaded first when Redis lacks it, and a write no replica acknowledged stands, then writes stop
waiting for a while."""

from __future__ import annotations

import logging
import time

import pytest
import redis.asyncio as aioredis

from server.launch.redis_process import RedisProcess
from server.store import replica_acks
from server.store.replica_acks import ReplicaGate

SCRIPT = "redis.call('SET', KEYS[1], ARGV[1]) return redis.call('GET', KEYS[1])"


async def test_a_write_stands_and_then_writes_stop_waiting(
    private_redis: RedisProcess, caplog: pytest.LogCaptureFixture
) -> None:
    client = aioredis.Redis.from_url(private_redis.url)
    try:
        await client.script_flush()
        script = client.register_script(SCRIPT)
        gate = ReplicaGate(replicas=1, timeout_ms=100)
        with caplog.at_level(logging.WARNING, logger=replica_acks.__name__):
            started = time.monotonic()
            # the script is not loaded yet: loaded, sent again, and its WAIT runs out (no replica)
            assert await gate.write(client, script, "test", ["acks:1"], ["one"]) == b"one"
            assert time.monotonic() - started >= 0.1
            assert "reached 0 of the 1 replicas" in caplog.text
            # for DEGRADED_SECONDS the next writes do not wait
            started = time.monotonic()
            assert await gate.write(client, script, "test", ["acks:2"], ["two"]) == b"two"
            assert time.monotonic() - started < 0.1
        assert await client.get("acks:1") == b"one"
    finally:
        await client.aclose()


async def test_with_no_replica_asked_for_a_write_goes_through_at_once(private_redis: RedisProcess) -> None:
    client = aioredis.Redis.from_url(private_redis.url)
    try:
        script = client.register_script(SCRIPT)
        gate = ReplicaGate(replicas=0, timeout_ms=1000)
        started = time.monotonic()
        assert await gate.write(client, script, "test", ["acks:3"], ["three"]) == b"three"
        assert time.monotonic() - started < 0.5
        assert not gate.degraded
    finally:
        await client.aclose()
