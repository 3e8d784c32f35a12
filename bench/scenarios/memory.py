"""Scenario 7, Redis memory per one-turn interaction: Redis's own `used_memory` over thousands of creates,
so that every key an interaction makes and its every index entry count (and the allocator's rounding),
beside one Redis string of the same text. A streamed create keeps an event log for an hour
(`store.event_log_ttl_seconds`): it is measured with its log, and kept (its log gone, as after that hour).
The names of the keys of one interaction are listed beside, with what MEMORY USAGE says of each."""

from __future__ import annotations

import asyncio
from typing import Any

from redis.asyncio import Redis

from ..client import Connection
from ..stats import ratio
from ..upstream import words
from .common import CREATE, HEADERS, Bench, json_object, payload

#: creates at once (each on its connection): the count measured, not their speed
_PARALLEL = 8


async def used_memory(redis: Redis) -> int:
    info: dict[str, Any] = await redis.info("memory")
    return int(info["used_memory"])


async def _keys_of(redis: Redis, interaction_id: str) -> dict[str, int]:
    """The keys that name the interaction (their name after its id), with MEMORY USAGE of each."""
    found: dict[str, int] = {}
    async for key in redis.scan_iter(match=f"ix:*{interaction_id}*", count=10_000):
        name = key.decode()
        found[name[name.index(interaction_id) + len(interaction_id) :] or "(hash)"] = int(
            await redis.memory_usage(key, samples=0) or 0
        )
    return dict(sorted(found.items()))


async def _create(conn: Connection, prompt: str, stream: bool) -> str:
    body = payload(model="echo", input=prompt, **({"stream": True} if stream else {}))
    response = await conn.request("POST", CREATE, body)
    if response.status != 200:
        raise RuntimeError(f"create answered {response.status}: {response.body[:300]!r}")
    if stream:
        return response.body.split(b'"id":"', 1)[1].split(b'"', 1)[0].decode()
    return str(json_object(response.body)["id"])


async def _creates(b: Bench, count: int, text: str, stream: bool, tag: str) -> list[str]:
    ids: list[str] = []

    async def one_connection(lane: int) -> None:
        async with Connection(b.server.url, HEADERS) as conn:
            for i in range(lane, count, _PARALLEL):
                ids.append(await _create(conn, f"{tag}{i:05d} {text}", stream))

    await asyncio.gather(*(one_connection(lane) for lane in range(_PARALLEL)))
    return ids


async def _variant(b: Bench, text: str, stream: bool, tag: str) -> dict[str, Any]:
    count = b.plan.memory_creates
    prompt_bytes = len(f"{tag}00000 {text}".encode())
    before_keys, before = await b.redis.dbsize(), await used_memory(b.redis)
    ids = await _creates(b, count, text, stream, tag)
    after_keys, after = await b.redis.dbsize(), await used_memory(b.redis)
    text_bytes = 2 * prompt_bytes  # the input, and the same words as the output
    per = (after - before) / count
    result: dict[str, Any] = {
        "creates": count,
        "text_bytes": text_bytes,
        "keys_per_interaction": round((after_keys - before_keys) / count, 2),
        "memory_bytes": round(per),
        "beyond_text_bytes": round(per - text_bytes),
        "keys": await _keys_of(b.redis, ids[0]),
    }
    if stream:
        logs = [f"{key}:ev" for key in await _hash_keys(b.redis, ids)]
        for start in range(0, len(logs), 500):
            await b.redis.delete(*logs[start : start + 500])
        kept = (await used_memory(b.redis) - before) / count
        result["kept_keys_per_interaction"] = round((await b.redis.dbsize() - before_keys) / count, 2)
        result["kept_memory_bytes"] = round(kept)
        result["kept_beyond_text_bytes"] = round(kept - text_bytes)
    return result


async def _hash_keys(redis: Redis, interaction_ids: list[str]) -> list[str]:
    """The record keys of these interactions (the tenant's prefix read from the first one)."""
    async for key in redis.scan_iter(match=f"ix:*:{interaction_ids[0]}", count=10_000):
        prefix = key.decode().removesuffix(interaction_ids[0])
        return [prefix + interaction_id for interaction_id in interaction_ids]
    return []


async def redis_memory(b: Bench) -> dict[str, Any]:
    """One-turn interactions holding about 1 KB of text: a 512-byte input that `echo` answers with itself."""
    text = words(200)[:512].rsplit(" ", 1)[0]
    results: dict[str, Any] = {
        "stored": await _variant(b, text, stream=False, tag="m"),
        "stored_streamed": await _variant(b, text, stream=True, tag="s"),
    }
    text_bytes = results["stored"]["text_bytes"]
    await b.redis.set("bench:memory:text", "x" * text_bytes)
    floor = int(await b.redis.memory_usage("bench:memory:text", samples=0) or 0)
    await b.redis.delete("bench:memory:text")
    results["baseline_string_bytes"] = floor
    for name in ("stored", "stored_streamed"):
        results[name]["ratio"] = ratio(results[name]["memory_bytes"], floor)
    return results
