"""Interactions created in the same millisecond are listed in their creation order, newest first, not by
their random ids (store/scripts/_index.lua scores them a fraction of a ms apart): across pages, under a
filter read from another index, within `after_ms`/`before_ms` bounds that fall on such a ms, and beside
records an earlier version indexed by the ms alone. The store in this process, on a real Redis: creates
awaited one after the other, a few per ms, so that the order they were created in is known."""

from __future__ import annotations

import asyncio
import math
import secrets
from typing import Any, cast

from server.protocol import status as st
from server.protocol.interaction import InteractionConfig
from server.protocol.records import StoredConfig
from server.store import keys, search_tags
from server.store.new_records import NewRecord
from server.store.search import Query, ids
from server.store.store import Store

TENANT = "t-order"
ALL = Query(tags=search_tags.ALL)


def record(model: str) -> NewRecord:
    return NewRecord(
        status=st.COMPLETED,
        created="2026-12-01T00:00:00Z",
        config=StoredConfig(config=InteractionConfig(model=model)),
        input_steps=[],
    )


async def create_in_order(store: Store, count: int) -> list[str]:
    """`count` interactions with random ids, each stored before the next is sent; their ids in order."""
    made = []
    for index in range(count):
        interaction_id = secrets.token_urlsafe(12)
        model = "even" if index % 2 == 0 else "odd"
        await store.interactions.create(
            TENANT, interaction_id, record(model), previous_interaction_id=None, walk=False
        )
        made.append(interaction_id)
    return made


async def listed(store: Store, query: Query, page_size: int) -> list[str]:
    """Every page of `query`, `page_size` at a time, as a client pages through them."""
    found: list[str] = []
    start = None
    while True:
        page = await store.search.page(TENANT, query, start=start, limit=page_size)
        found += ids(page.found)
        if page.next is None:
            return found
        start = page.next


async def millis(store: Store, made: list[str]) -> dict[str, int]:
    """The ms of each one's score (its hash's `sc`)."""
    prefix = keys.tenant_prefix(TENANT)
    redis = cast(Any, store.redis)
    return {i: math.floor(float(await redis.hget(prefix + i, "sc") or 0)) for i in made}


async def as_earlier_records(store: Store, made: list[str], ms: dict[str, int]) -> None:
    """What an earlier version stored for these: entries of one ZSET per index (their heads, while the
    bucket size let them grow), scored by the ms alone, and no score in their hashes."""
    prefix = keys.tenant_prefix(TENANT)
    tags = (search_tags.ALL, search_tags.ROOT, search_tags.model_tag("even"), search_tags.model_tag("odd"))
    for interaction_id in made:
        for tag in tags:
            if await store.redis.zscore(prefix + "idx:" + tag, interaction_id) is not None:
                await store.redis.zadd(prefix + "idx:" + tag, {interaction_id: ms[interaction_id]})
        await cast(Any, store.redis).hdel(prefix + interaction_id, "sc")


def bucket_size(store: Store, size: int) -> None:
    """The most members of an index's segment, from the next create on."""
    store.interactions.store.index_bucket_size = size


async def earlier_then_new(
    store: Store, earlier: int, new: int
) -> tuple[list[str], list[str], dict[str, int]]:
    """`earlier` records as an earlier version stored them (one ZSET per index), then `new` ones in
    buckets of 16; both lists of ids in creation order, and the ms of each one's score."""
    bucket_size(store, 1000)
    old = await create_in_order(store, earlier)
    ms = await millis(store, old)
    await as_earlier_records(store, old, ms)
    bucket_size(store, 16)
    made = await create_in_order(store, new)
    # an earlier record given its score as its small index became a bucket keeps its ms
    return old, made, ms | await millis(store, made)


async def test_interactions_of_one_ms_are_listed_newest_first(store: Store) -> None:
    made = await create_in_order(store, 300)
    ms = await millis(store, made)
    # the test means something only if some were created in the same ms (a few are, per ms, here)
    assert len(set(ms.values())) < len(made) - 20, "too few creates shared a millisecond"
    newest_first = made[::-1]
    for page_size in (1, 7, 100):
        assert await listed(store, ALL, page_size) == newest_first
    # a filter read from another index (the model's: half of them) keeps the same order
    even = Query(tags=search_tags.model_tag("even"))
    assert await listed(store, even, 5) == [i for i in newest_first if made.index(i) % 2 == 0]
    # time bounds on a shared ms take all of that ms, in order
    shared = next(m for m in ms.values() if list(ms.values()).count(m) > 1)
    within = Query(tags=search_tags.ALL, after_ms=shared, before_ms=shared)
    assert await listed(store, within, 1) == [i for i in newest_first if ms[i] == shared]
    after = Query(tags=search_tags.ALL, after_ms=shared)
    assert await listed(store, after, 3) == [i for i in newest_first if ms[i] >= shared]
    before = Query(tags=search_tags.ALL, before_ms=shared)
    assert await listed(store, before, 3) == [i for i in newest_first if ms[i] <= shared]


async def test_records_indexed_by_the_ms_alone_are_listed_once_beside_new_ones(store: Store) -> None:
    """An earlier version scored an index entry by its ms alone (ties in descending id order), in one ZSET
    per index: its records, and new ones in buckets after them, are each listed once, across pages of any
    size; the earlier index became bucket 0, where its records are found to be deleted."""
    old, new, ms = await earlier_then_new(store, 120, 60)
    made = [*old, *new]
    assert await store.redis.exists(keys.tenant_prefix(TENANT) + "idx:all#0")
    for page_size in (1, 4, 100):
        found = await listed(store, ALL, page_size)
        assert sorted(found) == sorted(made)
        # by ms, newest first; the new ones in creation order above the old ones
        assert [ms[i] for i in found] == sorted((ms[i] for i in made), reverse=True)
        assert found[: len(new)] == new[::-1]
    gone = [old[5], new[3]]
    assert await store.interactions.delete(TENANT, *gone) == 2
    assert await listed(store, ALL, 7) == [i for i in await listed(store, ALL, 100) if i not in gone]
    for tag in (search_tags.ALL, search_tags.model_tag("odd"), search_tags.model_tag("even")):
        assert not set(gone) & set(await listed(store, Query(tags=tag), 100))


async def test_a_sweep_takes_expired_ids_out_of_a_bucket_kept_alive(store: Store) -> None:
    """A bucket lives as long as its last member: one kept alive by a later turn keeps it, and the ids
    of its neighbours that expired are swept out by the creates that follow (a few each)."""
    bucket_size(store, 4)
    store.interactions.ttl_ms = 400
    made = await create_in_order(store, 12)
    prefix = keys.tenant_prefix(TENANT)
    kept = made[5]  # in bucket 2 once the head has moved on twice
    later = NewRecord(
        status=st.COMPLETED,
        created="2026-12-01T00:00:00Z",
        config=StoredConfig(config=InteractionConfig(model="even")),
        input_steps=[],
    )
    await asyncio.sleep(0.2)
    await store.interactions.create(TENANT, "later-turn", later, previous_interaction_id=kept, walk=False)
    await asyncio.sleep(0.35)
    assert not await store.redis.exists(prefix + made[4]) and await store.redis.exists(prefix + kept)
    bucket = prefix + "idx:all#2"
    assert kept.encode() in await store.redis.zrange(bucket, 0, -1)
    for _ in range(100):
        await create_in_order(store, 1)
        if await store.redis.zrange(bucket, 0, -1) == [kept.encode()]:
            break
    assert await store.redis.zrange(bucket, 0, -1) == [kept.encode()]
