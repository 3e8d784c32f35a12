"""Pages as OpenAI's lists page them (the stored chat completions' `GET /v1/chat/completions`): `limit`
items from just past the id `after`, oldest first unless `order=desc`, and `has_more`.

A client pages on from the last id it was given: a page is whole (its `limit` items, unless the matches
end), so the store's pages (each bounded in what it reads, store/search.py) are read one after the
other until it is, within ROUNDS of them."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from ..errors import InvalidArgument
from ..store import search_tags
from ..store.search import Found, Query, Search

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
#: the store's pages one list reads at most: a sparse filter's page may then be short, with has_more
ROUNDS = 8


class CursorPage(msgspec.Struct, kw_only=True):
    found: list[Found]
    has_more: bool


def limit_of(raw: str | None) -> int:
    """OpenAI's `limit`: 1 to 100, 20 when not given."""
    if raw is None or raw == "":
        return DEFAULT_LIMIT
    if not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise InvalidArgument(f"Expected a whole number from 1 to {MAX_LIMIT}, got {raw[:32]!r}", "limit")
    return int(raw)


def ascending(raw: str | None) -> bool:
    """OpenAI's `order`: asc (its default) or desc."""
    if raw is None or raw == "asc":
        return True
    if raw == "desc":
        return False
    raise InvalidArgument(f"Expected asc or desc, got {raw[:32]!r}", "order")


def query(*, dialect: str, labels: Mapping[str, str], model: str | None) -> Query:
    tags = search_tags.wanted(labels=labels, model=model, agent=None, roots_only=False, dialect=dialect)
    return Query(tags=tags)


async def page(
    search: Search, tenant: str, wanted: Query, *, after: str | None, limit: int, oldest_first: bool
) -> CursorPage:
    """Up to `limit` matches from just past `after` (None: from the start), and whether more follow."""
    found: list[Found] = []
    start = None
    for _ in range(ROUNDS):
        # one more than asked for: has_more is whether it came
        read = await search.page(
            tenant,
            wanted,
            start=start,
            limit=limit + 1 - len(found),
            ascending=oldest_first,
            after_id=after if start is None else None,
        )
        found += read.found
        if read.next is None or len(found) > limit:
            return CursorPage(found=found[:limit], has_more=len(found) > limit)
        start = read.next
    return CursorPage(found=found[:limit], has_more=True)
