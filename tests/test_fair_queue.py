"""Fair queueing through the official SDK, on the stacks users start (`make run`, the worker inside the
web process; and a web process with a worker process): tenant A queues a backlog of background
interactions, more than the worker's slots (`[worker] max_jobs = 2` here, so that a backlog is a few
interactions), then tenant B queues one. B's is taken at the next free slot, ahead of A's backlog (it would
be taken after all of it if the queue were one line), and every one of A's runs (their order is
tests/store/test_turns.py's)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from google import genai

from .replies import id_of, interaction
from .support import Stack, new_key, sdk, stacks_by_topology
from .waiting import until_async

CONFIG: dict[str, dict[str, Any]] = {"worker": {"max_jobs": 2}}
#: A's interactions: eight times the slots; each echo-slow run of WORDS words lasts 1 s (50 ms a word), so
#: that A's backlog is still there when B's create comes (A's creates go out at once)
BACKLOG = 16
WORDS = 20


@pytest.fixture(scope="module")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Stack]]:
    with stacks_by_topology(tmp_path_factory, "fair", ["make-run", "tcp-workers"], config=CONFIG) as started:
        yield started


@pytest.fixture(params=["make-run", "tcp-workers"])
def stack(request: pytest.FixtureRequest, stacks: dict[str, Stack]) -> Stack:
    return stacks[request.param]


async def completed(client: genai.Client, ids: list[str]) -> int:
    got = await asyncio.gather(*(client.aio.interactions.get(each) for each in ids))
    return sum(1 for each in got if each.status == "completed")


async def test_a_tenants_backlog_holds_another_tenants_job_back_by_one_turn(stack: Stack) -> None:
    a, b = sdk(stack.url, new_key()), sdk(stack.url, new_key())
    text = " ".join(f"w{i}" for i in range(WORDS))
    made = await asyncio.gather(
        *(a.aio.interactions.create(model="echo-slow", input=text, background=True) for _ in range(BACKLOG))
    )
    backlog = [id_of(interaction(each)) for each in made]
    before = await completed(a, backlog)
    assert BACKLOG - before >= BACKLOG // 2  # a backlog, or the test says nothing
    late = id_of(interaction(await b.aio.interactions.create(model="echo", input="my turn", background=True)))

    async def b_completed() -> bool:
        return (await b.aio.interactions.get(late)).status == "completed"

    await until_async(b_completed, within=30)
    # in one line, B's would have waited for all of A's left; in turns, for a slot to free (one or two)
    meanwhile = await completed(a, backlog) - before
    assert meanwhile <= (BACKLOG - before) // 2, (before, meanwhile)

    async def all_ended() -> bool:
        got = await asyncio.gather(*(a.aio.interactions.get(each) for each in backlog))
        return all(each.status != "in_progress" for each in got)

    # none left waiting in the queue (queued shows as in_progress); one failed by a loaded machine (its lease
    # lapsed) is not the queue's doing
    await until_async(all_ended, within=90, interval=0.2)
