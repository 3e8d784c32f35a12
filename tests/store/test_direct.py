"""The pipelined client of the request path's scripts (server/store/direct.py) against real redis-servers:
replies in order under concurrency, scripts reloaded after a flush, a database and a unix socket from the
URL, and a frozen, killed or restarted Redis as a bounded error followed by a working connection."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from redis.exceptions import AuthenticationError, BusyLoadingError, ResponseError

from server.launch.redis_process import RedisProcess
from server.store.direct import DirectRedis, encode, sha1
from server.store.outage import UNAVAILABLE
from tests.support import start_own_redis

SCRIPT = b"redis.call('SET', KEYS[1], ARGV[1]); return {redis.call('GET', KEYS[1]), tonumber(ARGV[2]) * 2}"


@pytest.fixture
async def direct(private_redis: RedisProcess) -> AsyncIterator[DirectRedis]:
    # the bound is not what these tests try (the frozen Redis's test has its own): a machine busy enough
    # to leave a thousand pipelined commands unanswered for 2 s failed them all with a TimeoutError
    client = DirectRedis(private_redis.url + "/5", bound=30.0, connect_timeout=10.0)
    await client.execute("FLUSHDB")  # this session's own Redis, database 5: used by nothing else
    try:
        yield client
    finally:
        await client.aclose()


def test_commands_are_resp_arrays_of_bulk_strings() -> None:
    assert encode(["SET", "k", b"v\r\n", 7, 1.5]) == (
        b"*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\nv\r\n\r\n$1\r\n7\r\n$3\r\n1.5\r\n"
    )
    with pytest.raises(TypeError, match="NoneType"):
        encode(["SET", None])


async def test_every_kind_of_reply_reaches_its_own_caller(direct: DirectRedis) -> None:
    assert await direct.execute("SET", "k", "v") == b"OK"
    assert await direct.execute("GET", "k") == b"v"
    assert await direct.execute("GET", "missing") is None
    assert await direct.execute("RPUSH", "l", "a", "b") == 2
    assert await direct.execute("LRANGE", "l", 0, -1) == [b"a", b"b"]
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        await direct.execute("GET", "l")
    # a thousand callers at once, pipelined on a few connections: each gets the reply to its command
    replies = await asyncio.gather(*(direct.execute("INCRBY", f"n{i % 7}", i) for i in range(1000)))
    totals: dict[int, int] = {}
    for i, reply in enumerate(replies):
        totals[i % 7] = totals.get(i % 7, 0) + i
        assert isinstance(reply, int)
    for key, total in totals.items():
        assert int(await direct.execute("GET", f"n{key}")) == total
    assert sum(conn is not None for conn in direct.connections) <= 4


async def test_a_script_is_loaded_again_after_redis_forgets_it(direct: DirectRedis) -> None:
    sha = sha1(SCRIPT)
    assert await direct.evalsha(sha, SCRIPT, ["s"], [b"x", 21]) == [b"x", 42]
    await direct.execute("SCRIPT", "FLUSH")
    assert await direct.evalsha(sha, SCRIPT, ["s"], [b"y", 2]) == [b"y", 4]
    with pytest.raises(ResponseError):
        await direct.evalsha(sha1(b"return redis.call('NOPE')"), b"return redis.call('NOPE')", [], [])


async def test_the_url_chooses_the_database_and_a_unix_socket(tmp_path: Path) -> None:
    unix = RedisProcess(tmp_path / "unix", appendonly=False).start()
    try:
        client = DirectRedis(unix.url + "?db=3", bound=2.0, connect_timeout=2.0)
        await client.execute("SET", "here", "3")
        await client.aclose()
        check = aioredis.Redis.from_url(unix.url + "?db=3")
        assert await check.get("here") == b"3"
        await check.aclose()
    finally:
        unix.stop()


async def test_a_cancelled_caller_does_not_shift_the_replies(direct: DirectRedis) -> None:
    slow = asyncio.create_task(direct.execute("BLPOP", "nothing", "0.2"))
    await asyncio.sleep(0.05)
    slow.cancel()
    # queued behind the sleep on the same connection (it is the only one with a command waiting)
    assert await direct.execute("ECHO", "after") == b"after"
    assert slow.cancelled()


async def test_a_frozen_redis_is_a_timeout_within_the_bound_and_a_new_connection_after(
    own_redis: RedisProcess,
) -> None:
    client = DirectRedis(own_redis.url, bound=0.5, connect_timeout=1.0)
    assert own_redis.process is not None
    try:
        assert await client.execute("PING") == b"PONG"
        os.kill(own_redis.process.pid, signal.SIGSTOP)
        started = time.monotonic()
        try:
            with pytest.raises(TimeoutError):
                await client.execute("PING")
            assert time.monotonic() - started < 2.0
        finally:
            os.kill(own_redis.process.pid, signal.SIGCONT)
        assert await client.execute("PING") == b"PONG"
    finally:
        await client.aclose()


async def test_a_command_fails_at_its_own_bound_not_at_an_older_ones(own_redis: RedisProcess) -> None:
    """Commands into a frozen Redis with a 0.6 s bound, one on each connection, then 0.4 s later one more
    (on a connection behind one of them): the first ones fail at their bound; the last is not failed with
    them, and gets its reply when Redis thaws in time for it. (Failed with them, its caller would answer
    503 for a write Redis then applied.)"""
    client = DirectRedis(own_redis.url, bound=0.6, connect_timeout=1.0)
    assert own_redis.process is not None
    pid = own_redis.process.pid
    try:
        blocked = []
        for _ in client.connections:  # each while the ones before wait: a connection each
            blocked.append(asyncio.ensure_future(client.execute("BLPOP", "nothing", "0.3")))
            await asyncio.sleep(0.05)
        await asyncio.gather(*blocked)
        opened = [c for c in client.connections if c is not None]
        assert len(opened) == len(client.connections)
        os.kill(pid, signal.SIGSTOP)
        try:
            first = [asyncio.ensure_future(client.execute("SET", f"k{i}", "1")) for i in range(len(opened))]
            await asyncio.sleep(0.4)
            last = asyncio.ensure_future(client.execute("SET", "last", "2"))
            for each in first:
                with pytest.raises(TimeoutError):
                    await each
            assert not last.done()
        finally:
            os.kill(pid, signal.SIGCONT)
        assert await last == b"OK"
        assert await client.execute("GET", "last") == b"2"
        # it waited behind a command that had timed out, on a connection kept while it waited
        assert any(c.lost is None for c in opened)
    finally:
        await client.aclose()


async def test_a_restarted_redis_fails_what_was_waiting_and_serves_what_comes_after(
    own_redis: RedisProcess,
) -> None:
    client = DirectRedis(own_redis.url, bound=5.0, connect_timeout=1.0)
    try:
        waiting = asyncio.create_task(client.execute("BLPOP", "nothing", "1"))
        await asyncio.sleep(0.2)
        own_redis.stop(kill=True)
        with pytest.raises(ConnectionError):
            await waiting
        with pytest.raises(ConnectionError):  # refused while it is down
            await client.execute("PING")
        start_own_redis(own_redis, may_move=False)
        assert await client.execute("PING") == b"PONG"
    finally:
        await client.aclose()


async def test_the_url_password_is_sent_and_a_wrong_one_is_refused(own_redis: RedisProcess) -> None:
    admin = aioredis.Redis.from_url(own_redis.url)
    await admin.config_set("requirepass", "s3cret")
    await admin.aclose()
    host = own_redis.url.removeprefix("redis://")
    client = DirectRedis(f"redis://:s3cret@{host}/2", bound=2.0, connect_timeout=2.0)
    wrong = DirectRedis(f"redis://:nope@{host}", bound=2.0, connect_timeout=2.0)
    try:
        assert await client.execute("SET", "k", "v") == b"OK"
        # as redis-py's client reads it: refused credentials are a connection that cannot be used
        with pytest.raises(AuthenticationError, match="invalid"):
            await wrong.execute("PING")
    finally:
        await client.aclose()
        await wrong.aclose()


async def test_a_loading_redis_is_an_outage_not_a_bug() -> None:
    """A Redis restarting answers LOADING until its data is read: an outage (503), as redis-py's client
    reads it, never a ResponseError that would be a 500. A raw server on a socket plays that Redis."""

    async def loading(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.read(65536):
            writer.write(b"-LOADING Redis is loading the dataset in memory\r\n")
        writer.close()

    server = await asyncio.start_server(loading, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = DirectRedis(f"redis://127.0.0.1:{port}", bound=2.0, connect_timeout=2.0)
    try:
        with pytest.raises(UNAVAILABLE) as failed:
            await client.execute("PING")
        assert isinstance(failed.value, BusyLoadingError)
    finally:
        await client.aclose()
        server.close()
        await server.wait_closed()
