"""A repeated Idempotency-Key, in-process: the repeat of a foreground create waits for the first call's
end (woken by the interaction's log, not by polling) and answers the same interaction; the upstream is
called once."""

from __future__ import annotations

import asyncio
import time

import pytest

from server.errors import InvalidArgument
from server.protocol import status as st
from server.runtime import Runtime

from .harness import ScriptedBackend, reply_of, steps_text

TENANT = "tenant-idempotency"
BODY = {"model": "scripted", "input": "once only"}


async def test_a_repeat_waits_for_the_first_calls_end(runtime: Runtime, scripted: ScriptedBackend) -> None:
    first = asyncio.create_task(reply_of(runtime, TENANT, BODY, idempotency_key="k1"))
    call = await scripted.next_call()
    call.text("slow ", "answer")
    repeat = asyncio.create_task(reply_of(runtime, TENANT, BODY, idempotency_key="k1"))
    await asyncio.sleep(0.5)
    assert not repeat.done()  # the first call has not answered: neither does its repeat

    call.finish()
    original = await asyncio.wait_for(first, 5)
    answered_at = time.monotonic()
    repeated = await asyncio.wait_for(repeat, 5)
    # woken by the first call's end (its log), not by a poll or the wait's 5 s bound
    assert time.monotonic() - answered_at < 1.0

    assert repeated.interaction.id == original.interaction.id
    assert repeated.interaction.status == original.interaction.status == st.COMPLETED
    record = await runtime.control.get(TENANT, str(original.interaction.id))
    assert record.output is not None and steps_text(record.output.steps) == "slow answer"
    assert len(scripted.calls) == 1


async def test_a_repeat_with_another_body_is_refused_at_once(
    runtime: Runtime, scripted: ScriptedBackend
) -> None:
    first = asyncio.create_task(reply_of(runtime, TENANT, BODY, idempotency_key="k2"))
    call = await scripted.next_call()
    with pytest.raises(InvalidArgument, match="different request body"):
        await asyncio.wait_for(
            reply_of(runtime, TENANT, {**BODY, "input": "something else"}, idempotency_key="k2"), 2
        )
    assert not first.done()
    call.text("fine")
    call.finish()
    assert (await asyncio.wait_for(first, 5)).interaction.status == st.COMPLETED
    assert len(scripted.calls) == 1


async def test_keys_are_per_tenant(runtime: Runtime, scripted: ScriptedBackend) -> None:
    """The same key from another tenant is another request: it runs, and answers its own interaction."""
    mine = asyncio.create_task(reply_of(runtime, TENANT, BODY, idempotency_key="k3"))
    theirs = asyncio.create_task(reply_of(runtime, "another-tenant", BODY, idempotency_key="k3"))
    for _ in range(2):
        call = await scripted.next_call()
        call.text("x")
        call.finish()
    a, b = await asyncio.wait_for(asyncio.gather(mine, theirs), 5)
    assert a.interaction.id != b.interaction.id
    assert len(scripted.calls) == 2
