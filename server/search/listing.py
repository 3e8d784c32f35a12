"""`GET /{version}/interactions`: a page of the tenant's interactions, newest first, that match a filter."""

from __future__ import annotations

from ..protocol import paging, views
from ..protocol.base import Wire
from ..protocol.interaction import Interaction, is_interaction_id
from ..store.search import Search
from .filters import Filter, to_query

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100


class InteractionList(Wire):
    #: required, so that an empty page still says `"interactions": []`
    interactions: list[Interaction]
    #: absent on the last page; a page may be short (even empty) and still have one: a sparse filter's
    #: page stops after reading a bounded number of interactions
    next_page_token: str | None = None


class Listing:
    def __init__(self, search: Search) -> None:
        self.search = search

    async def page(
        self,
        tenant: str,
        given: Filter,
        *,
        page_size: str | None,
        page_token: str | None,
        include_steps: bool,
    ) -> InteractionList:
        """Items as `get` shows them; without `steps` unless `include_steps` (then the full timeline,
        this turn's input steps before the output, as `get` gives it)."""
        size = paging.page_size(page_size, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        start = paging.after_token(page_token, is_interaction_id)
        page = await self.search.page(
            tenant, to_query(given), start=start, limit=size, with_input=include_steps
        )
        items = []
        for found in page.found:
            view = views.from_record(found.record, full_timeline=include_steps)
            if not include_steps:
                view.steps = None
            items.append(view)
        token = paging.page_token(page.next) if page.next is not None else None
        return InteractionList(interactions=items, next_page_token=token)
