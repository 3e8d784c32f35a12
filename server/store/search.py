"""Pages of a tenant's stored interactions, found through the search indexes the scripts keep
(scripts/search.lua; tags in store/search_tags.py): one round trip a page, whatever the tenant holds.
Newest first (the lists of Google's dialect), or oldest first (OpenAI's lists default to it)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from ..protocol.records import Record
from . import keys
from .commands import text
from .keys import Field
from .records import BLOBS, META_FIELDS, record_of
from .scripts import Scripts

#: the most ids one page reads before it answers (short, with a place to go on from): the page is one
#: script, during which Redis serves no one else; a thousand ids took 11 ms of its CPU (bench "list")
PAGE_BUDGET = 250

#: the hash fields a page returns of each match (the script adds its status first and its blobs last): a
#: Record's, then its conversation
_FIELDS = (*META_FIELDS[1:], Field.ROOT)


class Query(msgspec.Struct, kw_only=True, frozen=True):
    """What a page must match: all of `tags` (search_tags.wanted), one of `statuses` (lifecycle states;
    empty for any), created within [`after_ms`, `before_ms`] (None: unbounded)."""

    tags: str
    statuses: frozenset[str] = frozenset()
    after_ms: int | None = None
    before_ms: int | None = None


class Found(msgspec.Struct, kw_only=True):
    """One interaction of a page: its record (input steps only when asked for), and its conversation."""

    record: Record
    root: str


class Page(msgspec.Struct, kw_only=True):
    found: list[Found]
    #: (creation ms, id) of the last interaction looked at, where the next page starts; None at the end
    next: tuple[int, str] | None


class Search:
    def __init__(self, scripts: Scripts) -> None:
        self.scripts = scripts

    async def page(
        self,
        tenant: str,
        query: Query,
        *,
        start: tuple[int, str] | None,
        limit: int,
        with_input: bool = False,
        budget: int = PAGE_BUDGET,
        ascending: bool = False,
        after_id: str | None = None,
    ) -> Page:
        """Up to `limit` matches, newest first (`ascending`: oldest first), from `start` (a page's `next`;
        None: the newest, or the oldest), or from just past the interaction `after_id` (an id a client
        pages from: an empty page if it is gone)."""
        top, low, after = _bounds(query, start, ascending)
        if after_id is not None:
            top, low, after = (top, "id", after_id) if ascending else ("id", low, after_id)
        result = await self.scripts.search(
            keys=[keys.search_expiries(tenant)],
            args=[
                keys.tenant_prefix(tenant),
                query.tags,
                " ".join(sorted(query.statuses)),
                top,
                low,
                after,
                limit,
                budget,
                "asc" if ascending else "desc",
                "1" if with_input else "",
                *_FIELDS,
            ],
        )
        rows, where = result
        width = 1 + len(META_FIELDS) + 1 + len(BLOBS)
        found = [_found(rows[at : at + width]) for at in range(0, len(rows), width)]
        return Page(found=found, next=_where(text(where)))


def _bounds(query: Query, start: tuple[int, str] | None, ascending: bool) -> tuple[str, str, str]:
    """(the highest creation ms a page reads, the lowest, the id it starts after): the page starts where
    the last one stopped (at its top newest first, at its bottom oldest first), within the query's bounds."""
    at = start[0] if start else None
    highs = [bound for bound in (query.before_ms, None if ascending else at) if bound is not None]
    lows = [bound for bound in (query.after_ms, at if ascending else None) if bound is not None]
    top = str(min(highs)) if highs else "+inf"
    low = str(max(lows)) if lows else "-inf"
    starts = low if ascending else top
    return top, low, start[1] if start is not None and starts == str(start[0]) else ""


def _where(value: str) -> tuple[int, str] | None:
    if not value:
        return None
    score, _, item_id = value.partition(" ")
    return int(float(score)), item_id


def _found(row: Sequence[Any]) -> Found:
    """A row of the script's: the id, the record's hash fields, its conversation's first id, its blobs."""
    interaction_id, root, blobs = text(row[0]), row[len(META_FIELDS) + 1], row[-len(BLOBS) :]
    record = record_of(interaction_id, [*row[1 : len(META_FIELDS) + 1], *blobs])
    return Found(record=record, root=text(root) if root else interaction_id)


def ids(found: Iterable[Found]) -> list[str]:
    return [each.record.id for each in found]
