"""Interactions created in the same millisecond are listed in their creation order, newest first, not by
their random ids (store/scripts/_index.lua scores them a fraction of a ms apart): across pages, under a
filter read from another index, within `after_ms`/`before_ms` bounds that fall on such a ms, and beside
records an earlier version indexed by the ms alone. The store in this process, on a real Redis: creates
awaited one after the other, a few per ms, so that the order they were created in is known."""

from __future__ import annotations

import math
import secrets

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
    index = keys.tenant_prefix(TENANT) + "idx:" + search_tags.ALL
    return {i: math.floor(float(await store.redis.zscore(index, i) or 0)) for i in made}


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
    """An earlier version scored an index entry by its ms alone (ties in descending id order): such
    records, beside new ones of the same ms, are each listed once, across pages of any size."""
    made = await create_in_order(store, 120)
    ms = await millis(store, made)
    prefix = keys.tenant_prefix(TENANT)
    old = made[::3]
    for interaction_id in old:
        for tag in (
            search_tags.ALL,
            search_tags.ROOT,
            search_tags.model_tag("even"),
            search_tags.model_tag("odd"),
        ):
            if await store.redis.zscore(prefix + "idx:" + tag, interaction_id) is not None:
                await store.redis.zadd(prefix + "idx:" + tag, {interaction_id: ms[interaction_id]})
    for page_size in (1, 4, 100):
        found = await listed(store, ALL, page_size)
        assert sorted(found) == sorted(made)
        # by ms, newest first; within a ms the new ones (in creation order) above the old ones
        assert [ms[i] for i in found] == sorted((ms[i] for i in made), reverse=True)
    new_only = [i for i in made[::-1] if i not in old]
    assert [i for i in await listed(store, ALL, 5) if i not in old] == new_only
