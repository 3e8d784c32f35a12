"""Pages of a tenant's stored interactions, found through the search indexes the scripts keep
(scripts/search.lua; tags in store/search_tags.py): one round trip a page, whatever the tenant holds."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from ..protocol.records import Record
from . import keys
from .commands import text
from .keys import Field
from .records import decode_config, decode_output, decode_steps
from .scripts import Scripts

#: the most ids one page reads before it answers (short, with a place to go on from): the page is one
#: script, during which Redis serves no one else; a thousand ids took 11 ms of its CPU (bench "list")
PAGE_BUDGET = 250

_FIELDS = (
    Field.CREATED,
    Field.UPDATED,
    Field.PREV,
    Field.BACKGROUND,
    Field.LOG,
    Field.SEQ,
    Field.CONFIG,
    Field.OUTPUT,
    Field.ROOT,
)


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
    ) -> Page:
        """Up to `limit` matches, newest first, from `start` (a page's `next`; None: the newest)."""
        fields = (*_FIELDS, Field.INPUT) if with_input else _FIELDS
        top = _highest(query, start)
        result = await self.scripts.search(
            args=[
                keys.tenant_prefix(tenant),
                query.tags,
                " ".join(sorted(query.statuses)),
                top,
                "-inf" if query.after_ms is None else str(query.after_ms),
                start[1] if start is not None and top == str(start[0]) else "",
                limit,
                budget,
                *fields,
            ]
        )
        rows, where = result
        width = 2 + len(fields)
        found = [_found(rows[at : at + width], with_input) for at in range(0, len(rows), width)]
        return Page(found=found, next=_where(text(where)))


def _highest(query: Query, start: tuple[int, str] | None) -> str:
    """The highest creation ms a page reads: where the last one stopped, or the query's bound."""
    bounds = [bound for bound in (query.before_ms, start[0] if start else None) if bound is not None]
    return str(min(bounds)) if bounds else "+inf"


def _where(value: str) -> tuple[int, str] | None:
    if not value:
        return None
    score, _, item_id = value.partition(" ")
    return int(float(score)), item_id


def _found(row: Sequence[Any], with_input: bool) -> Found:
    interaction_id, status, created, updated, prev, bg, log, seq, cfg, out, root = row[:11]
    record = Record(
        id=text(interaction_id),
        status=text(status),
        created=text(created),
        updated=text(updated),
        previous_interaction_id=text(prev) if prev else None,
        background=bg == b"1",
        logged=log == b"1",
        seq=int(seq or 0),
        config=decode_config(cfg),
        input_steps=decode_steps(row[11]) if with_input else [],
        output=decode_output(out),
    )
    return Found(record=record, root=text(root) if root else record.id)


def ids(found: Iterable[Found]) -> list[str]:
    return [each.record.id for each in found]
