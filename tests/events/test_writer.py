"""The event-log writer in-process, against a real Redis: a heartbeat over thousands of runs renews every
lease in one tick, with its script calls under way together rather than one after another."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence

from server.errors import StoreConflict
from server.events.writer import LogWriter
from server.protocol import status as st
from server.store import keys
from server.store.outage import Outage
from server.store.runs import RunBatch, Runs
from server.store.store import Store
from tests.store.test_runs import TENANT, queued

#: five script calls of 200 runs, and a short one
RUNS = 1050


class Overlap(Runs):
    """The store's own Runs, counting how many of its append calls are under way at once."""

    def __init__(self, runs: Runs) -> None:
        self.__dict__.update(runs.__dict__)
        self.active = 0
        self.most = 0
        self.calls = 0

    async def append(self, runs: Sequence[RunBatch]) -> list[StoreConflict | None]:
        self.active += 1
        self.calls += 1
        self.most = max(self.most, self.active)
        try:
            return await super().append(runs)
        finally:
            self.active -= 1


async def test_a_heartbeat_renews_every_lease_with_its_calls_together(store: Store) -> None:
    runner = store.settings.runner
    writer = LogWriter(Overlap(store.runs), runner, Outage())
    for n in range(RUNS):
        await queued(store, f"i{n}")
        claim = await store.runs.claim(TENANT, f"i{n}", 0)
        writer.register(TENANT, f"i{n}", claim.fence, lambda conflict: None)
    # every lease as the claims left it, pushed into the past so a renewal is plain to see
    members = [keys.member(TENANT, f"i{n}") for n in range(RUNS)]
    await store.redis.zadd(keys.RUNNING, dict.fromkeys(members, 1))
    started = time.monotonic()
    task = asyncio.create_task(writer.run())
    try:
        while await store.redis.zrangebyscore(keys.RUNNING, 0, 1, start=0, num=1):
            assert time.monotonic() - started < runner.heartbeat_seconds + 5, "leases not renewed"
            await asyncio.sleep(0.05)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    spy = writer.runs
    assert isinstance(spy, Overlap)
    assert spy.calls >= 6
    assert spy.most > 1, "the tick's script calls went one after another"
    deadline = time.time() * 1000 + runner.lease_seconds * 1000
    scores = await store.redis.zmscore(keys.RUNNING, members)
    assert all(score is not None and deadline - 3000 < score <= deadline + 1000 for score in scores)
    assert await store.interactions.status(TENANT, "i0") == st.IN_PROGRESS
