"""What a list shows of a background interaction no worker has taken yet, and what its filter matches,
in-process against a real Redis: the store holds it `queued`; items show `in_progress`, as Google's API
answers a background create, and a filter matches the status an item shows (issue 25, point 6)."""

from __future__ import annotations

import pytest

from server.errors import InvalidArgument
from server.protocol import lifecycle
from server.protocol import status as st
from server.protocol.interaction import InteractionConfig
from server.protocol.records import StoredConfig
from server.runner.ids import new_id
from server.search.filters import Filter, to_query
from server.search.listing import Listing
from server.store.new_records import NewRecord
from server.store.store import Store

TENANT = "t-shown"


async def stored(store: Store, status: str) -> str:
    interaction_id = new_id()
    record = NewRecord(
        status=status,
        created="2026-11-30T00:00:00Z",
        background=status == st.QUEUED,
        logged=True,
        config=StoredConfig(config=InteractionConfig(model="echo")),
        input_steps=[],
    )
    await store.interactions.create(TENANT, interaction_id, record, previous_interaction_id=None, walk=False)
    return interaction_id


async def listed(store: Store, status: str) -> list[tuple[str | None, str]]:
    page = await Listing(store.search).page(
        TENANT, Filter(status=status), page_size=None, page_token=None, include_steps=False
    )
    return [(item.id, item.status) for item in page.interactions]


async def test_a_waiting_run_is_listed_and_found_as_in_progress(store: Store) -> None:
    waiting = await stored(store, st.QUEUED)
    running = await stored(store, st.IN_PROGRESS)
    assert await store.interactions.status(TENANT, waiting) == st.QUEUED  # kept, for pickup and reaper
    found = await listed(store, "in_progress")
    assert sorted(found) == sorted([(waiting, "in_progress"), (running, "in_progress")])
    assert await listed(store, "completed,cancelled") == []


async def test_a_queued_filter_is_a_400_naming_status(store: Store) -> None:
    await stored(store, st.QUEUED)
    for value in ("queued", "completed,queued"):
        with pytest.raises(InvalidArgument) as caught:
            await listed(store, value)
        assert caught.value.field == "status" and "in_progress" in str(caught.value)


def test_each_shown_status_matches_the_states_shown_as_it() -> None:
    assert to_query(Filter(status="in_progress")).statuses == {st.QUEUED, st.IN_PROGRESS}
    assert to_query(Filter(status="cancelled")).statuses == {st.CANCELLED, lifecycle.CANCELLING}
    assert to_query(Filter(status="completed")).statuses == {st.COMPLETED}
    for state in lifecycle.STATES:
        shown = lifecycle.wire_status(state)
        assert shown in st.SHOWN
        assert state in to_query(Filter(status=shown)).statuses
