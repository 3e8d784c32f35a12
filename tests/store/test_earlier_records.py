"""Records an earlier version stored are read and written by this one, with no migration step: their blobs
(cfg, in, out) are in their hash, where this version keeps them in a body of their own
(store/scripts/_body.lua), and their config holds the input as sent, which this version leaves out when
it is a plain string. Each test makes a record with this version and puts it back in the earlier layout
(`to_earlier_layout`), then gets, lists, continues, finishes and deletes it."""

from __future__ import annotations

from typing import Any, cast

from server.protocol.steps import ModelOutputStep, UserInputStep
from server.runtime import Runtime
from server.store import keys, search_tags
from server.store.records import encode
from server.store.search import Query

from ..runner.harness import ScriptedBackend, reply_of, steps_text, stream_of

TENANT = "tenant-earlier"


async def to_earlier_layout(runtime: Runtime, interaction_id: str) -> None:
    """The record as an earlier version stored it: its blobs in its hash, its config with its input."""
    record = await runtime.store.interactions.get(TENANT, interaction_id)
    assert record.config.input is not None
    blobs: dict[str, Any] = {
        keys.Field.CONFIG: encode(record.config),
        keys.Field.INPUT: encode(record.input_steps),
    }
    if record.output is not None:
        blobs[keys.Field.OUTPUT] = encode(record.output)
    redis = cast(Any, runtime.store.redis)
    await redis.hset(keys.interaction(TENANT, interaction_id), mapping=blobs)
    assert await redis.delete(keys.body(TENANT, interaction_id)) == 1


async def test_an_earlier_versions_record_is_got_listed_continued_and_deleted(
    runtime: Runtime, scripted: ScriptedBackend
) -> None:
    first = (
        await reply_of(runtime, TENANT, {"model": "echo", "input": "said before the upgrade"})
    ).interaction
    assert first.id is not None
    before = await runtime.store.interactions.get(TENANT, first.id)
    await to_earlier_layout(runtime, first.id)

    assert await runtime.store.interactions.get(TENANT, first.id) == before
    page = await runtime.store.search.page(
        TENANT, Query(tags=search_tags.ALL), start=None, limit=10, with_input=True
    )
    assert [found.record for found in page.found] == [before]

    # a turn of this version continues it: the chain's steps read from the earlier record
    stream = await stream_of(
        runtime,
        TENANT,
        {"model": "scripted", "input": "and after", "previous_interaction_id": first.id, "stream": True},
    )
    call = await scripted.next_call()
    kinds = [type(step) for step in call.request.history]
    assert kinds == [UserInputStep, ModelOutputStep, UserInputStep]
    assert steps_text(call.request.history) == "said before the upgrade"  # echo's answer, from `out`
    call.text("fine")
    call.finish()
    await stream.until("interaction.completed")

    assert await runtime.store.interactions.delete(TENANT, first.id) == 1
    # the conversation's index, named by its first turn, holds the second turn, which is not deleted
    left = [key async for key in cast(Any, runtime.store.redis).scan_iter(match=f"*{first.id}*")]
    assert left == [(keys.search_index(TENANT, search_tags.conversation_tag(first.id))).encode()]


async def test_a_run_of_an_earlier_version_ends_in_its_record(
    runtime: Runtime, scripted: ScriptedBackend
) -> None:
    """A run the upgrade found going (its record in the earlier layout) writes its output where its blobs
    are, and the record reads whole."""
    stream = await stream_of(runtime, TENANT, {"model": "scripted", "input": "a long one", "stream": True})
    call = await scripted.next_call()
    call.text("half ")
    await stream.until("step.delta", 1)
    interaction_id = str(stream.events[0]["interaction"]["id"])
    await to_earlier_layout(runtime, interaction_id)
    call.text("and the rest")
    call.finish()
    await stream.until("interaction.completed")

    record = await runtime.store.interactions.get(TENANT, interaction_id)
    assert record.output is not None and steps_text(record.output.steps) == "half and the rest"
    assert record.config.input == "a long one"
    assert not await cast(Any, runtime.store.redis).exists(keys.body(TENANT, interaction_id))
