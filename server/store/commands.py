"""The Redis commands the store uses, typed as this asyncio client answers them.

redis-py types its commands as "an awaitable or a value" (one class serves its sync and asyncio
clients), which leaves every call untyped. The store sees its clients through this protocol instead,
once, where it is built (`typed`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, cast

from redis.asyncio import Redis


class Commands(Protocol):
    async def hmget(self, name: str, keys: Sequence[str]) -> list[bytes | None]: ...
    async def hget(self, name: str, key: str) -> bytes | None: ...
    async def exists(self, *names: str) -> int: ...
    async def delete(self, *names: str) -> int: ...
    async def get(self, name: str) -> bytes | None: ...
    async def mget(self, keys: list[str]) -> list[bytes | None]: ...
    async def hgetall(self, name: str) -> dict[bytes, bytes]: ...
    async def smembers(self, name: str) -> set[bytes]: ...
    async def lrange(self, name: str, start: int, end: int) -> list[bytes]: ...
    async def zscore(self, name: str, value: str) -> float | None: ...
    async def zrangebyscore(
        self,
        name: str,
        min: str,
        max: str,
        start: int | None = ...,
        num: int | None = ...,
        withscores: bool = ...,
    ) -> list[tuple[bytes, float]]: ...
    async def set(self, name: str, value: str, *, nx: bool = ..., ex: int | None = ...) -> bool | None: ...
    async def zadd(self, name: str, mapping: Mapping[str, float]) -> int: ...
    async def zrem(self, name: str, *values: str) -> int: ...
    async def publish(self, channel: str, message: str) -> int: ...
    async def rpush(self, name: str, *values: str) -> int: ...
    async def ltrim(self, name: str, start: int, end: int) -> bool: ...
    async def pexpire(self, name: str, time: int) -> bool: ...
    async def blpop(self, keys: Sequence[str], timeout: float) -> tuple[bytes, bytes] | None: ...  # noqa: ASYNC109
    async def xrange(
        self, name: str, min: str = ..., max: str = ..., count: int | None = ...
    ) -> list[tuple[bytes, dict[bytes, bytes]]]: ...
    async def xread(
        self, streams: Mapping[str, str], count: int | None = ..., block: int | None = ...
    ) -> list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]]: ...


def typed(client: Redis) -> Commands:
    return cast(Commands, client)


def text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def netstrings(values: Sequence[Any]) -> bytes:
    """Values as netstrings ("5:hello3:abc"), one script argument for many (scripts/_body.lua reads them):
    the client spends more on each argument than Redis does."""
    parts = []
    for value in values:
        raw = value if isinstance(value, bytes) else str(value).encode()
        parts.append(b"%d:%s" % (len(raw), raw))
    return b"".join(parts)


def now_ms() -> int:
    return int(time.time() * 1000)


async def oldest_first(
    redis: Commands, name: str, after: tuple[int, str] | None, count: int
) -> list[tuple[int, str]]:
    """Up to `count` (score, member) of a ZSET scored by creation ms, oldest first, after the one given:
    members of the same millisecond share a score and come in member order, so those after `after` in its
    millisecond come first, then the later milliseconds (the webhooks' and agents' lists)."""
    found: list[tuple[int, str]] = []
    low = "-inf"
    if after is not None:
        score, last = after
        same = await redis.zrangebyscore(name, str(score), str(score), withscores=True)
        found = [(score, text(each)) for each, _ in same if text(each) > last][:count]
        low = f"({score}"
    if len(found) < count:
        rest = await redis.zrangebyscore(name, low, "+inf", 0, count - len(found), withscores=True)
        found += [(int(score), text(each)) for each, score in rest]
    return found
