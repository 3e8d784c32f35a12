"""A Redis that is not in a state to serve, a real one made a replica (REPLICAOF) of a primary that is not
there: READONLY to a write (a primary demoted by a failover, still at the address the server knows) and
MASTERDOWN to a read (a replica that lost its primary and serves no stale data). Both are outages, a 503
with Retry-After (store/outage.py), from the scripts' client (direct.py) and from the commands' client
(connection.py) alike, never the ResponseError of a bug (a 500 and an "unhandled error" line)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis
from redis.exceptions import MasterDownError, ReadOnlyError

from server.launch.redis_process import RedisProcess, free_port
from server.store import connection
from server.store.direct import DirectRedis, sha1
from server.store.outage import UNAVAILABLE

WRITE = b"return redis.call('SET', KEYS[1], ARGV[1])"


@pytest.fixture
async def replica(own_redis: RedisProcess) -> AsyncIterator[str]:
    """The URL of a Redis made the replica of a port nothing listens on: its link to the primary is down."""
    admin = aioredis.Redis.from_url(own_redis.url)
    await admin.set("k", "before")
    await admin.execute_command("REPLICAOF", "127.0.0.1", str(free_port()))
    try:
        yield own_redis.url
    finally:
        await admin.aclose()


async def test_a_demoted_primary_is_an_outage_to_the_scripts_and_the_commands(replica: str) -> None:
    direct = DirectRedis(replica, bound=5.0, connect_timeout=5.0)
    commands, blocking = connection.build(connection.parse(replica), "q", None, None, timeout=5.0)
    try:
        with pytest.raises(UNAVAILABLE) as script:
            await direct.evalsha(sha1(WRITE), WRITE, ["k"], ["after"])
        assert isinstance(script.value, ReadOnlyError)
        with pytest.raises(UNAVAILABLE) as command:
            await commands.set("k", "after")
        assert isinstance(command.value, ReadOnlyError)
        # reads still served (stale data allowed, Redis's default)
        assert await commands.get("k") == b"before"
    finally:
        await direct.aclose()
        await connection.close(commands, blocking)


async def test_a_replica_without_its_primary_is_an_outage_to_the_scripts_and_the_commands(
    replica: str,
) -> None:
    admin = aioredis.Redis.from_url(replica)
    await admin.config_set("replica-serve-stale-data", "no")
    await admin.aclose()
    direct = DirectRedis(replica, bound=5.0, connect_timeout=5.0)
    commands, blocking = connection.build(connection.parse(replica), "q", None, None, timeout=5.0)
    try:
        with pytest.raises(UNAVAILABLE) as script:
            await direct.execute("GET", "k")
        assert isinstance(script.value, MasterDownError)
        with pytest.raises(UNAVAILABLE) as command:
            await commands.get("k")
        assert isinstance(command.value, MasterDownError)
    finally:
        await direct.aclose()
        await connection.close(commands, blocking)
