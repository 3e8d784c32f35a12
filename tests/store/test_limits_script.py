"""limits.lua's arithmetic, at times the test chooses, against a real Redis (the store's script): the
sliding minute of tokens, the day's, the request rate's burst and spacing, and what a refusal leaves."""

from __future__ import annotations

from typing import Any, cast

import pytest

from server.store import keys
from server.store.limits import Refusal, TenantLimits
from server.store.store import Store
from server.store.usage import day_of

TENANT = "limits-script"
#: a minute's start (ms), far from a day's end
MINUTE = 29_000_000
T0 = MINUTE * 60_000


def _redis(store: Store) -> Any:
    """The store's commands client, untyped: redis-py types its replies as sync-or-async."""
    return cast(Any, store.redis)


async def _check(
    store: Store, limits: TenantLimits, now: int, *, background: str = "", admit: bool = True
) -> list[object]:
    found = await store.limits.check(TENANT, limits, background, admit=admit, now=now)
    if isinstance(found, Refusal):
        return ["over", found.limit, found.retry_ms, found.value]
    return ["ok", found]


async def test_the_minute_of_tokens_slides_and_says_when_it_frees(store: Store) -> None:
    minutes = keys.minute_tokens(TENANT)
    await _redis(store).hset(minutes, str(MINUTE - 1), "100")
    limits = TenantLimits(tokens_per_minute=60)
    # 10 s into the minute: 0 + 100 x 50/60 = 83.3 of 60; below it once 100 x (1 - f) < 60, f > 0.4 (24 s)
    over, limit, wait, value = await _check(store, limits, T0 + 10_000)
    assert (over, limit, value) == ("over", "tokens_per_minute", 60) and 14_000 <= int(str(wait)) <= 14_001
    # 30 s in: 50 used, 10 left
    assert await _check(store, limits, T0 + 30_000) == ["ok", 10]
    # this minute's own count over the limit: the next minute, until its weight falls below
    await _redis(store).hset(minutes, str(MINUTE), "120")
    over, limit, wait, value = await _check(store, limits, T0 + 45_000)
    assert (over, limit, value) == ("over", "tokens_per_minute", 60) and 45_000 <= int(str(wait)) <= 45_001


async def test_a_settle_counts_its_tokens_in_its_minute_and_keeps_two(store: Store) -> None:
    for minute in (MINUTE - 3, MINUTE - 1):
        await _redis(store).hset(keys.minute_tokens(TENANT), str(minute), "7")
    await store.usage.scripts.usage_add(
        keys=[keys.usage(TENANT, day_of(T0))], args=["all", "completed", "10 5 0 0 15 1", 60_000, T0 + 5]
    )
    counts = await _redis(store).hgetall(keys.minute_tokens(TENANT))
    assert counts == {str(MINUTE - 1).encode(): b"7", str(MINUTE).encode(): b"15"}


async def test_the_days_tokens_refuse_until_the_next_utc_day(store: Store) -> None:
    await _redis(store).hset(keys.usage(TENANT, day_of(T0)), "all|total", "500")
    assert await _check(store, TenantLimits(tokens_per_day=600), T0) == ["ok", 100]
    assert await _check(store, TenantLimits(tokens_per_day=500), T0) == [
        "over",
        "tokens_per_day",
        86_400_000 - T0 % 86_400_000,
        500,
    ]
    # a budget read (a run starting) is never refused: it says what is left
    assert await _check(store, TenantLimits(tokens_per_day=500), T0, admit=False) == ["ok", 0]


async def test_requests_come_in_a_burst_then_one_an_interval_and_refusals_count_nothing(store: Store) -> None:
    limits = TenantLimits(requests_per_minute=6)  # a burst of 6, then one every 10 s
    for _ in range(6):
        assert await _check(store, limits, T0) == ["ok", -1]
    assert await _check(store, limits, T0) == ["over", "requests_per_minute", 10_000, 6]
    # refused again later: each refusal took nothing, so the wait shrinks with the clock alone
    assert await _check(store, limits, T0 + 9_999) == ["over", "requests_per_minute", 1, 6]
    assert await _check(store, limits, T0 + 10_000) == ["ok", -1]
    assert await _check(store, limits, T0 + 10_000) == ["over", "requests_per_minute", 10_000, 6]


@pytest.mark.parametrize("status", ["completed", "cancelled", None])
async def test_a_background_place_is_freed_by_its_end_or_an_unstored_create(
    store: Store, status: str | None
) -> None:
    limits = TenantLimits(background_runs=1)
    assert await _check(store, limits, T0, background="v1_first") == ["ok", -1]
    record = keys.interaction(TENANT, "v1_first")
    await _redis(store).hset(record, "status", "in_progress")
    assert await _check(store, limits, T0 + 1, background="v1_second") == ["over", "background_runs", 1000, 1]
    if status is None:
        # never stored: freed once it is older than a create takes to store it
        await _redis(store).delete(record)
        assert (await _check(store, limits, T0 + 2, background="v1_second"))[0] == "over"
        assert await _check(store, limits, T0 + 60_002, background="v1_second") == ["ok", -1]
    else:
        await _redis(store).hset(record, "status", status)
        assert await _check(store, limits, T0 + 2, background="v1_second") == ["ok", -1]
    assert await _redis(store).zrange(keys.background_runs(TENANT), 0, -1) == [b"v1_second"]


async def test_stored_interactions_wait_for_the_day_whose_expiries_free_a_place(store: Store) -> None:
    day = T0 // 86_400_000
    await _redis(store).hset(keys.stored_interactions(TENANT), mapping={day - 1: 5, day: 1, day + 2: 2})
    # yesterday's have expired: 3 are held, and today's end takes one
    assert await _check(store, TenantLimits(stored_interactions=4), T0) == ["ok", -1]
    end_of = [(day + n) * 86_400_000 - T0 for n in (1, 3)]
    assert await _check(store, TenantLimits(stored_interactions=3), T0) == [
        "over",
        "stored_interactions",
        end_of[0],
        3,
    ]
    assert await _check(store, TenantLimits(stored_interactions=2), T0) == [
        "over",
        "stored_interactions",
        end_of[1],
        2,
    ]
    assert set(await _redis(store).hkeys(keys.stored_interactions(TENANT))) == {
        str(day).encode(),
        str(day + 2).encode(),
    }
