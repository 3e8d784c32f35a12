"""Scenario 7, Redis memory per one-turn interaction: MEMORY USAGE summed over all of its keys, beside one
Redis string of the same text."""

from __future__ import annotations

from typing import Any

from redis.asyncio import Redis

from ..client import Connection
from ..stats import ratio
from ..upstream import words
from .common import CREATE, HEADERS, Bench, json_object, payload


async def _memory_of(redis: Redis, interaction_id: str) -> tuple[int, list[str]]:
    """MEMORY USAGE summed over every key that names the interaction."""
    total, names = 0, []
    async for key in redis.scan_iter(match=f"ix:*{interaction_id}*", count=10_000):
        total += int(await redis.memory_usage(key, samples=0) or 0)
        name = key.decode()
        names.append(name[name.index(interaction_id) + len(interaction_id) :] or "(hash)")
    return total, sorted(names)


async def redis_memory(b: Bench) -> dict[str, Any]:
    """One-turn interactions holding about 1 KB of text: a 512-byte input that `echo` answers with itself."""
    plan = b.plan
    text = words(200)[:512].rsplit(" ", 1)[0]
    variants = {"stored": {}, "stored_streamed": {"stream": True}}
    results: dict[str, Any] = {}
    async with Connection(b.server.url, HEADERS) as conn:
        for name, extra in variants.items():
            usages: list[int] = []
            text_bytes, key_names = 0, list[str]()
            for i in range(plan.memory_samples):
                prompt = f"m{i:04d} {text}"
                response = await conn.request("POST", CREATE, payload(model="echo", input=prompt, **extra))
                if response.status != 200:
                    raise RuntimeError(f"create answered {response.status}: {response.body[:300]!r}")
                if extra.get("stream"):
                    interaction_id = response.body.split(b'"id":"', 1)[1].split(b'"', 1)[0].decode()
                else:
                    interaction_id = json_object(response.body)["id"]
                usage, key_names = await _memory_of(b.redis, interaction_id)
                usages.append(usage)
                text_bytes = 2 * len(prompt.encode())  # the input, and the same words as the output
            mean = sum(usages) / len(usages)
            results[name] = {
                "samples": len(usages),
                "keys": key_names,
                "text_bytes": text_bytes,
                "memory_bytes": round(mean),
                "beyond_text_bytes": round(mean - text_bytes),
            }
    await b.redis.set("bench:memory:text", "x" * results["stored"]["text_bytes"])
    floor = int(await b.redis.memory_usage("bench:memory:text", samples=0) or 0)
    await b.redis.delete("bench:memory:text")
    results["baseline_string_bytes"] = floor
    for name in variants:
        results[name]["ratio"] = ratio(results[name]["memory_bytes"], floor)
    return results
