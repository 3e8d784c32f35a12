"""POST /{v}/interactions:purge (our extension, after AIP-165): a dry run counts, `force` queues a job that
deletes every match with the rest of its conversation, GET /{v}/operations/{id} follows it. On `make run`'s
topology (the job in the web process's worker) and with separate worker processes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import pytest
import redis
from google.genai._interactions import NotFoundError

from server.runtime import Runtime
from server.search import deleting
from server.search.filters import Filter
from server.store import keys
from server.store.deletions import Progress

from ..runner.harness import reply_of
from ..support import Stack, stacks_by_topology
from ..waiting import until
from .support import Tenant

NAMES = ["make-run", "tcp-workers"]


@pytest.fixture(scope="module")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Stack]]:
    with stacks_by_topology(tmp_path_factory, "purge", NAMES) as started:
        yield started


@pytest.fixture(params=NAMES)
def stack(request: pytest.FixtureRequest, stacks: dict[str, Stack]) -> Stack:
    return stacks[request.param]


def purge(tenant: Tenant, **body: Any) -> dict[str, Any]:
    reply = tenant.http.post("/v1beta/interactions:purge", json=body)
    assert reply.status_code == 200, reply.text
    answer: dict[str, Any] = reply.json()
    return answer


def finished(tenant: Tenant, operation: dict[str, Any]) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        reply = tenant.http.get(f"/v1beta/{operation['name']}")
        assert reply.status_code == 200, reply.text
        current: dict[str, Any] = reply.json()
        return current if current["done"] else None

    return until(done, timeout=30)


def conversations(tenant: Tenant) -> dict[str, list[str]]:
    """u1 has two conversations, one of whose later turns has no label; u2 one, continuing nothing of u1."""
    a1 = tenant.turn("a1", labels={"user": "u1"})
    a2 = tenant.turn("a2", after=a1)
    a3 = tenant.turn("a3", labels={"user": "u1"}, after=a2)
    b1 = tenant.turn("b1", labels={"user": "u1"})
    c1 = tenant.turn("c1", labels={"user": "u2"})
    return {"u1": [a1, a2, a3, b1], "u2": [c1]}


def test_a_dry_run_counts_and_deletes_nothing(stack: Stack, tenants: Callable[[Stack], Tenant]) -> None:
    tenant = tenants(stack)
    made = conversations(tenant)
    counted = purge(tenant, filter={"labels": {"user": "u1"}})
    assert counted["match_count"] == 3
    assert counted["conversation_count"] == 2
    assert counted["purge_count"] == 4
    assert sorted(counted["purge_sample"]) == sorted(made["u1"])
    assert len(tenant.ids()) == 5


def test_force_deletes_every_match_with_its_conversation(
    stack: Stack, tenants: Callable[[Stack], Tenant]
) -> None:
    tenant = tenants(stack)
    made = conversations(tenant)
    operation = purge(tenant, filter={"labels": {"user": "u1"}}, force=True)
    assert operation["name"].startswith("operations/purge_") and operation["metadata"]["state"] in (
        "pending",
        "running",
        "done",
    )
    result = finished(tenant, operation)
    assert result["response"] == {"purge_count": 4}
    assert result["metadata"]["match_count"] == 3 and result["metadata"]["conversations_done"] == 2
    assert tenant.ids() == made["u2"]
    for gone in made["u1"]:
        with pytest.raises(NotFoundError):
            tenant.sdk.interactions.get(id=gone)
    assert not [key for key in tenant.keys() if any(gone in key for gone in made["u1"])]


def test_a_running_interaction_of_a_match_is_stopped_and_deleted(
    stack: Stack, tenants: Callable[[Stack], Tenant]
) -> None:
    tenant = tenants(stack)
    first = tenant.turn("start", labels={"session": "s9"})
    running = tenant.turn("word " * 2000, model="echo-slow", background=True, after=first)
    until(lambda: tenant.ids(status="in_progress") == [running], timeout=15)
    result = finished(tenant, purge(tenant, filter={"labels": {"session": "s9"}}, force=True))
    assert result["response"] == {"purge_count": 2}
    assert tenant.ids() == []
    store = redis.Redis.from_url(stack.redis_url)
    member = keys.member(tenant.id, running)
    until(lambda: store.zscore(keys.RUNNING, member) is None, timeout=10)


def test_tenants_purge_only_their_own(stack: Stack, tenants: Callable[[Stack], Tenant]) -> None:
    mine, theirs = tenants(stack), tenants(stack)
    kept = theirs.turn("theirs", labels={"user": "u1"})
    mine.turn("mine", labels={"user": "u1"})
    operation = purge(mine, filter={"labels": {"user": "u1"}}, force=True)
    assert finished(mine, operation)["response"] == {"purge_count": 1}
    assert theirs.ids() == [kept]
    assert theirs.http.get(f"/v1beta/{operation['name']}").status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "filter"),
        ({"filter": {}}, "filter"),
        ({"filter": {"status": "gone"}}, "filter.status"),
        ({"filter": {"user": "u1"}}, "filter"),
        ({"filter": {"labels": {"user": 1}}}, "filter.labels[...]"),
        ({"filter": {"created_after": "now"}}, "filter.created_after"),
        ({"filter": {"labels": {"user": "u1"}}, "force": "yes"}, "force"),
    ],
)
def test_bad_requests_are_400s_naming_the_field(
    stacks: dict[str, Stack], tenants: Callable[[Stack], Tenant], body: dict[str, Any], field: str
) -> None:
    tenant = tenants(stacks["make-run"])
    kept = tenant.turn("kept", labels={"user": "u1"})
    status, message = tenant.error("POST", "/v1beta/interactions:purge", json=body)
    assert status == 400 and f"`{field}`" in message, message
    assert tenant.ids() == [kept]


def test_an_unknown_operation_is_a_404(stacks: dict[str, Stack], tenants: Callable[[Stack], Tenant]) -> None:
    tenant = tenants(stacks["make-run"])
    for name in ("operations/purge_nothing", "operations/other", "operations/" + "x" * 300):
        reply = tenant.http.get(f"/v1beta/{name}")
        assert reply.status_code == 404, name
        assert reply.json()["error"]["status"] == "NOT_FOUND"


# -- a job run again: in-process, on the runtime's private Redis, interrupted where the test chooses ----

RERUN_TENANT = "t-purge-rerun"


async def _turn(runtime: Runtime, text: str, **extra: Any) -> str:
    reply = await reply_of(runtime, RERUN_TENANT, {"model": "echo", "input": text, **extra})
    assert reply.interaction.id is not None
    return reply.interaction.id


async def _stored(runtime: Runtime, made: list[str]) -> set[str]:
    return {each for each in made if await runtime.store.interactions.status(RERUN_TENANT, each) is not None}


async def _progress(runtime: Runtime, deletion_id: str) -> Progress:
    progress = await runtime.store.deletions.get(RERUN_TENANT, deletion_id)
    assert progress is not None
    return progress


@pytest.mark.parametrize("page", [1, 3])
async def test_a_purge_run_again_after_interruptions_counts_what_it_really_did(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch, page: int
) -> None:
    """The job interrupted again and again (as a worker dies and its job is taken again), at whatever
    await it is in (a delete sent and its count not yet written among them): the operation's counts are
    the filter's matches when it began and what was really deleted, never a re-run's remainder added to.
    Pages of 1 and 3 ids (not 500), so that the job takes many deletes: small conversations alone or
    sharing one, a long one over several."""
    monkeypatch.setattr(deleting, "_PAGE", page)
    made: list[str] = []
    for n in range(24):
        made.append(first := await _turn(runtime, f"c{n}", labels={"user": "u1"}))
        if n % 3 == 0:  # a later turn without the label: deleted with its conversation, not a match
            made.append(await _turn(runtime, f"c{n}+", previous_interaction_id=first))
        if n == 1:  # a long conversation: more later turns than a page holds
            for turn in range(7):
                made.append(await _turn(runtime, f"c1.{turn}", previous_interaction_id=made[-1]))
    made.append(kept := await _turn(runtime, "theirs", labels={"user": "u2"}))
    before = await _stored(runtime, made)
    purges, deletion_id = runtime.purges, "purge_rerun"
    await runtime.store.deletions.create(
        RERUN_TENANT, deletion_id, msgspec.json.encode(Filter(labels={"user": "u1"}))
    )
    runs = 0
    while (started := await _progress(runtime, deletion_id)).state != "done":
        runs += 1
        job = asyncio.create_task(purges.run(RERUN_TENANT, deletion_id))
        # each run dies once it has deleted something more, a varying few steps later: sometimes between
        # a delete and its count, sometimes amid a search or a write of its progress
        while (await _progress(runtime, deletion_id)).deleted == started.deleted and not job.done():
            pass
        for _ in range(runs % 5):
            await asyncio.sleep(0)
        job.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await job
        assert runs < 200, "the job makes progress between interruptions"
    assert runs > 2
    after = await _stored(runtime, made)
    assert after == {kept}
    done = await _progress(runtime, deletion_id)
    assert (done.matched, done.conversations, done.conversations_done) == (24, 24, 24)
    assert done.deleted == len(before - after) == 39
    # delivered once more after it ended (arq's at-least-once): nothing changes
    await purges.run(RERUN_TENANT, deletion_id)
    assert (await _progress(runtime, deletion_id)).deleted == 39
    operation = await purges.operation(RERUN_TENANT, deletion_id)
    assert operation is not None and operation.response == {"purge_count": 39}
    assert operation.metadata["match_count"] == 24 and operation.metadata["purge_count"] == 39


async def test_a_purge_an_earlier_version_left_mid_delete_counts_that_delete_once(runtime: Runtime) -> None:
    """An earlier version marked a delete's ids (`inflight`) before it sent it and counted them after:
    its run killed in between left them marked, deleted and not counted. This version's re-run counts them,
    once, and deletes the rest."""
    made = [await _turn(runtime, f"e{n}", labels={"user": "u1"}) for n in range(4)]
    purges, deletion_id = runtime.purges, "purge_earlier"
    await runtime.store.deletions.create(
        RERUN_TENANT, deletion_id, msgspec.json.encode(Filter(labels={"user": "u1"}))
    )
    # as that version's run left it: the matches collected, the first two deleted, marked and not counted
    await runtime.store.deletions.collected(RERUN_TENANT, deletion_id, made, len(made))
    await runtime.store.deletions.update(RERUN_TENANT, deletion_id, inflight=msgspec.json.encode(made[:2]))
    assert await runtime.store.interactions.delete(RERUN_TENANT, *made[:2]) == 2

    await purges.run(RERUN_TENANT, deletion_id)
    done = await _progress(runtime, deletion_id)
    assert (done.state, done.deleted, done.inflight) == ("done", 4, b"")
    assert await _stored(runtime, made) == set()
