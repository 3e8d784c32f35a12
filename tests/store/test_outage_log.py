"""What the outage log says (store/outage.py) about a real Redis frozen (SIGSTOP) for 3 s while a loop beats
against it through the server's own bounded client (2 s per command) and supervisor (runner/loops.py): the
first line names what failed, how and after how long (a bounded command's timeout has no message of its
own), and the recovery line gives the freeze's true length, dated from the start of the first attempt
that failed, not from the moment it gave up."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import signal

import pytest

from server.launch.redis_process import RedisProcess
from server.runner.loops import supervise
from server.store import connection, heartbeats
from server.store.outage import Outage

FREEZE_SECONDS = 3.0


async def test_a_frozen_redis_is_logged_with_its_reason_and_its_true_length(
    own_redis: RedisProcess, caplog: pytest.LogCaptureFixture
) -> None:
    assert own_redis.process is not None
    commands, blocking = connection.build(connection.parse(own_redis.url), "q", None, None, timeout=2.0)
    outage = Outage()

    async def step() -> None:
        await heartbeats.beat(commands, "q", "w", 1.0, tidy=False)
        outage.answered()

    caplog.set_level(logging.WARNING, logger="server.store.outage")
    loop = asyncio.create_task(supervise("worker heartbeat", step, outage, pause=0.2))
    try:
        await asyncio.sleep(0.5)
        os.kill(own_redis.process.pid, signal.SIGSTOP)
        try:
            await asyncio.sleep(FREEZE_SECONDS)
        finally:
            os.kill(own_redis.process.pid, signal.SIGCONT)
        for _ in range(100):
            if any(r.getMessage().startswith("Redis is back") for r in caplog.records):
                break
            await asyncio.sleep(0.1)
    finally:
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop
        await connection.close(commands, blocking)
    lines = [r.getMessage() for r in caplog.records]
    [down] = [line for line in lines if "unavailable" in line]
    assert re.search(r"\(worker heartbeat failed after \d\.\d s: TimeoutError\b", down), down
    [back] = [line for line in lines if line.startswith("Redis is back")]
    seconds = float(re.findall(r"after ([\d.]+) s", back)[0])
    # the freeze's length, give or take a loop's pause (the last attempt may start before the freeze)
    assert FREEZE_SECONDS - 0.5 <= seconds <= FREEZE_SECONDS + 2.0, back
