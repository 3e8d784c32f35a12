"""Writes through an outage, against a real Redis: a script Redis runs after its caller gave up writes
nothing, so a 503 ("Redis did not answer in time") is true: the write was not applied, not even when Redis
thaws; and the write that ends a run is retried until Redis takes it (runner/retried.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import msgspec
import pytest

from server import settings as settings_module
from server.errors import StatusChanged
from server.launch.redis_process import RedisProcess
from server.protocol import status as st
from server.protocol.interaction import InteractionConfig
from server.protocol.lifecycle import Event
from server.protocol.records import Output, StoredConfig
from server.runner.retried import through_outage
from server.store import keys
from server.store.deadlines import Deadlines, LateWrite
from server.store.new_records import NewRecord
from server.store.outage import UNAVAILABLE, Outage
from server.store.scripts import Scripts
from server.store.store import Store

TENANT = "t1"
BOUND = 0.5  # store.redis_timeout_seconds of these tests


@pytest.fixture(params=["direct", "redis-py"])
async def store(own_redis: RedisProcess, request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    """The store on the pipelined client, and on redis-py's (as with TLS or replica_acks)."""
    loaded = settings_module.load({"REDIS_URL": own_redis.url})
    store_settings = msgspec.structs.replace(loaded.store, redis_timeout_seconds=BOUND)
    opened = await Store.open(msgspec.structs.replace(loaded, store=store_settings))
    if request.param == "redis-py":
        opened.interactions.scripts = Scripts(opened.redis, None, None, opened.deadlines[0])
    try:
        yield opened
    finally:
        await opened.close()


def new_record() -> NewRecord:
    return NewRecord(
        status=st.QUEUED,
        created="2026-12-01T00:00:00Z",
        background=True,
        logged=True,
        config=StoredConfig(config=InteractionConfig(model="echo")),
        input_steps=[],
    )


async def create(store: Store, interaction_id: str) -> None:
    await store.interactions.create(
        TENANT, interaction_id, new_record(), previous_interaction_id=None, walk=False
    )


async def test_a_write_sent_into_a_frozen_redis_never_lands(store: Store, own_redis: RedisProcess) -> None:
    assert own_redis.process is not None
    await create(store, "before")
    os.kill(own_redis.process.pid, signal.SIGSTOP)
    try:
        with pytest.raises(UNAVAILABLE):
            await create(store, "frozen")
        await asyncio.sleep(BOUND)  # it sits in Redis's socket past its deadline
    finally:
        os.kill(own_redis.process.pid, signal.SIGCONT)
    # Redis runs it now, and refuses it: the 503 its caller got was true
    for _ in range(50):
        if await store.redis.ping():
            break
    assert await store.redis.exists(keys.interaction(TENANT, "before"))
    assert not await store.redis.exists(keys.interaction(TENANT, "frozen"))
    await create(store, "after")
    assert await store.redis.exists(keys.interaction(TENANT, "after"))


async def test_a_late_answer_is_an_outage_and_corrects_the_clock(store: Store) -> None:
    """A LATE that comes back while its caller waits means this process's idea of Redis's clock was off
    (here by 10 s): the write is refused as an outage, and the clock is measured again."""
    deadlines = store.deadlines[0]
    deadlines.offset_ms -= 10_000
    with pytest.raises(LateWrite):
        await create(store, "skewed")
    assert not await store.redis.exists(keys.interaction(TENANT, "skewed"))
    assert deadlines.calibrating is not None
    await deadlines.calibrating
    assert abs(deadlines.offset_ms) < 1_000
    await create(store, "skewed")
    assert await store.redis.exists(keys.interaction(TENANT, "skewed"))


async def test_the_offset_of_redis_clock_is_measured() -> None:
    async def ahead() -> int:
        return int(time.time() * 1000) + 5_000

    deadlines = Deadlines(2.0, ahead)
    await deadlines.calibrate()
    assert 4_900 < deadlines.offset_ms < 5_100
    # the caller waits 2 s; the script must have run 0.25 s before that, in Redis's clock
    assert deadlines.next() - int(time.time() * 1000) == pytest.approx(5_000 + 1_750, abs=100)


def test_a_short_wait_keeps_a_quarter_for_the_reply() -> None:
    assert Deadlines(0.4).budget_ms == 300


async def claimed(store: Store, interaction_id: str) -> int:
    await create(store, interaction_id)
    return (await store.runs.claim(TENANT, interaction_id, 0)).fence


def finisher(store: Store, interaction_id: str, fence: int) -> Callable[[], Awaitable[object]]:
    async def write() -> object:
        return await store.runs.finish(
            TENANT,
            interaction_id,
            event=Event.COMPLETE,
            fence=fence,
            output=Output(steps=[]),
            updated="2026-12-01T00:00:01Z",
            events=[(3, b"event: x\ndata: {}\n\n")],
        )

    return write


def ended_as_written(exc: Exception) -> bool:
    return isinstance(exc, StatusChanged) and exc.current == st.COMPLETED


async def test_a_runs_end_is_written_through_a_freeze(store: Store, own_redis: RedisProcess) -> None:
    """The end of a run that met a frozen Redis is retried until Redis takes it (each try that timed out
    refused by its deadline when Redis thaws), and the run ends as it ended, not as the reaper would."""
    assert own_redis.process is not None
    fence = await claimed(store, "run")
    pid = own_redis.process.pid
    os.kill(pid, signal.SIGSTOP)
    asyncio.get_running_loop().call_later(3 * BOUND, os.kill, pid, signal.SIGCONT)
    started = time.monotonic()
    write = finisher(store, "run", fence)
    await through_outage(write, seconds=10, landed=ended_as_written, outage=Outage(), what="the end")
    assert time.monotonic() - started >= 3 * BOUND  # it did meet the freeze
    assert await store.interactions.status(TENANT, "run") == st.COMPLETED


async def test_a_try_whose_reply_was_lost_is_found_applied(store: Store) -> None:
    fence = await claimed(store, "lost-reply")
    write = finisher(store, "lost-reply", fence)
    tries: list[int] = []

    async def reply_lost_once() -> object:
        tries.append(1)
        result = await write()
        if len(tries) == 1:
            raise TimeoutError("the reply did not come back")
        return result

    await through_outage(reply_lost_once, seconds=5, landed=ended_as_written, outage=None, what="the end")
    assert len(tries) == 2
    assert await store.interactions.status(TENANT, "lost-reply") == st.COMPLETED


async def test_an_outage_longer_than_the_budget_is_raised(store: Store, own_redis: RedisProcess) -> None:
    assert own_redis.process is not None
    fence = await claimed(store, "long")
    own_redis.stop()
    with pytest.raises(UNAVAILABLE):
        await through_outage(
            finisher(store, "long", fence), seconds=1, landed=ended_as_written, outage=None, what="the end"
        )
