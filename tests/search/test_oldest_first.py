"""Pages oldest first (store/scripts/search.lua with 'asc', OpenAI's lists' default order), and pages
that start just past an id a client names (OpenAI's `after`), in either order: every interaction once, in
creation order, across pages of any size, under a filter read from another index, within time bounds, and
beside records an earlier version indexed by the ms alone. The store in this process, on a real Redis."""

from __future__ import annotations

from server.store import keys, search_tags
from server.store.search import Query, ids
from server.store.store import Store

from .test_creation_order import ALL, TENANT, create_in_order, earlier_then_new, millis


async def listed_up(store: Store, query: Query, page_size: int) -> list[str]:
    """Every page of `query` oldest first, `page_size` at a time."""
    found: list[str] = []
    start = None
    while True:
        page = await store.search.page(TENANT, query, start=start, limit=page_size, ascending=True)
        found += ids(page.found)
        if page.next is None:
            return found
        start = page.next


async def listed_after(store: Store, query: Query, page_size: int, ascending: bool) -> list[str]:
    """Every page, each asked for from the last id of the one before (as an OpenAI client pages)."""
    page = await store.search.page(TENANT, query, start=None, limit=page_size, ascending=ascending)
    found = ids(page.found)
    while page.next is not None and found:
        page = await store.search.page(
            TENANT, query, start=None, limit=page_size, ascending=ascending, after_id=found[-1]
        )
        found += ids(page.found)
    return found


async def test_oldest_first_covers_everything_once_in_creation_order(store: Store) -> None:
    made = await create_in_order(store, 200)
    ms = await millis(store, made)
    assert len(set(ms.values())) < len(made) - 10, "too few creates shared a millisecond"
    for page_size in (1, 7, 100):
        assert await listed_up(store, ALL, page_size) == made
    even = Query(tags=search_tags.model_tag("even"))
    assert await listed_up(store, even, 5) == [i for i in made if made.index(i) % 2 == 0]
    shared = next(m for m in ms.values() if list(ms.values()).count(m) > 1)
    within = Query(tags=search_tags.ALL, after_ms=shared, before_ms=shared)
    assert await listed_up(store, within, 1) == [i for i in made if ms[i] == shared]
    after = Query(tags=search_tags.ALL, after_ms=shared)
    assert await listed_up(store, after, 3) == [i for i in made if ms[i] >= shared]
    before = Query(tags=search_tags.ALL, before_ms=shared)
    assert await listed_up(store, before, 3) == [i for i in made if ms[i] <= shared]


async def test_pages_from_an_id_in_either_order(store: Store) -> None:
    made = await create_in_order(store, 90)
    for page_size in (1, 8):
        assert await listed_after(store, ALL, page_size, ascending=True) == made
        assert await listed_after(store, ALL, page_size, ascending=False) == made[::-1]
    odd = Query(tags=search_tags.model_tag("odd"))
    assert await listed_after(store, odd, 4, ascending=True) == made[1::2]
    # an id that is not there (deleted since, or never) starts no page
    page = await store.search.page(TENANT, ALL, start=None, limit=5, ascending=True, after_id="gone")
    assert page.found == [] and page.next is None


async def test_records_indexed_by_the_ms_alone_are_listed_once_oldest_first(store: Store) -> None:
    """A small index of an earlier version (fewer members than a bucket) becomes an ordinary bucket once
    new members fill it, its records given their scores then: found to be deleted as new ones are."""
    old, new, ms = await earlier_then_new(store, 10, 40)
    made = [*old, *new]
    for page_size in (1, 4, 100):
        found = await listed_up(store, ALL, page_size)
        assert sorted(found) == sorted(made)
        assert [ms[i] for i in found] == sorted(ms[i] for i in made)
        assert [i for i in found if i not in old] == new
    assert await store.interactions.delete(TENANT, old[2]) == 1
    assert old[2] not in await listed_up(store, ALL, 3)
    assert not await store.redis.zscore(keys.tenant_prefix(TENANT) + "idx:all#1", old[2])
