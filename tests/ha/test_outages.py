"""Redis stopped or frozen under the stacks users start (`make run`: a launched Redis on its socket with the
worker in the web process; and a web process with a separate worker process on a Redis of their own), while
background runs end and while clients, the official SDK with its default retries among them, create
interactions. What the server answered must be what happened."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any, NamedTuple

import httpx
import pytest

from ..support import Stack, new_key, stacks_by_topology
from ..waiting import until
from .load import PATH, REQUEST_TIMEOUT, Answers
from .redis_faults import error_lines, frozen, start_redis, stop_redis, wait_ready
from .sdk_retries import KINDS, RetriedCreate, stored_ids
from .sentinels import Group, stack_on_sentinels

NAMES = ["make-run", "tcp-workers"]
#: leases and the reaper as shipped (a run's lease outlasts an 8 s outage); a lost job looked for after 3 s
CONFIG: dict[str, dict[str, Any]] = {
    "runner": {
        "lease_seconds": 10.0,
        "heartbeat_seconds": 1.0,
        "reaper_interval_seconds": 1.0,
        "pickup_seconds": 3.0,
    }
}
RUNS = 12
OUTAGE = 8.0
LONG_FREEZE = 18.0


@pytest.fixture(scope="module")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Stack]]:
    with stacks_by_topology(tmp_path_factory, "outages", NAMES, config=CONFIG) as started:
        yield started


def start_runs(stacks: dict[str, Stack]) -> dict[str, Answers]:
    """RUNS background runs on each stack, all started, each to end 3.5-8 s after its start (echo-slow's
    50 ms a word): within an outage that begins now and lasts OUTAGE seconds."""
    runs = {name: Answers(stack.url, new_key()) for name, stack in stacks.items()}
    for name, answers in runs.items():
        for index in range(RUNS):
            answers.create(70 + 8 * index, f"{name}{index}")
    for answers in runs.values():
        until(answers.running, timeout=10, interval=0.1)
    return runs


def check_runs(stacks: dict[str, Stack], runs: dict[str, Answers]) -> None:
    for stack in stacks.values():
        wait_ready(stack)
    wrong: dict[str, list[str]] = {}
    for name, answers in runs.items():
        until(answers.ended, timeout=30, interval=0.2)
        wrong[name] = answers.wrong()
        answers.close()
    assert wrong == {name: [] for name in runs}, "\n".join(f"{n}: {w}" for n, ws in wrong.items() for w in ws)


def test_a_stopped_redis_loses_no_finished_answer(stacks: dict[str, Stack]) -> None:
    """Redis stopped for 8 s (SIGTERM; started again on the same address and data) while 12 background runs
    end: "an answer the model finished is kept: each run ends `completed` with its whole answer"."""
    runs = start_runs(stacks)
    for stack in stacks.values():
        stop_redis(stack)
    time.sleep(OUTAGE)
    for stack in stacks.values():
        start_redis(stack)
    check_runs(stacks, runs)


def test_a_frozen_redis_loses_no_finished_answer_and_logs_no_false_error(stacks: dict[str, Stack]) -> None:
    """Redis frozen (SIGSTOP) for 8 s while 12 background runs end: "each ends `completed` with its whole
    answer, and nothing is logged as an ERROR that did not fail"."""
    before = {name: len(error_lines(stack)) for name, stack in stacks.items()}
    runs = start_runs(stacks)
    with contextlib.ExitStack() as thaw:
        for stack in stacks.values():
            thaw.enter_context(frozen(stack))
        time.sleep(OUTAGE)
    check_runs(stacks, runs)
    logged = {name: error_lines(stack)[before[name] :] for name, stack in stacks.items()}
    assert logged == {name: [] for name in stacks}, logged


class KeyedCreate(NamedTuple):
    """A raw create with an Idempotency-Key sent once during the freeze, and its answer."""

    api_key: str
    idempotency_key: str
    body: dict[str, Any]
    status: int


class LongFreeze(NamedTuple):
    """What clients got from creates sent during an 18 s freeze, per stack."""

    creates: dict[str, list[RetriedCreate]]
    keyed: dict[str, KeyedCreate]


@pytest.fixture(scope="module")
def long_freeze(stacks: dict[str, Stack]) -> LongFreeze:
    """Redis frozen for 18 s on each stack. During it, creates of each kind (foreground, background, stream)
    by the SDK with its default retries, at 0.5 s, 9 s and 15 s into the freeze (the first spend their
    retries within it, the last are answered after it), one of them with an Idempotency-Key; and a raw
    create with an Idempotency-Key, sent once."""
    creates = {
        name: [RetriedCreate(stack.url, kind, delay) for kind in KINDS for delay in (0.5, 9.0, 15.0)]
        + [RetriedCreate(stack.url, "foreground", 1.0, idempotency_key=f"sdk-{name}")]
        for name, stack in stacks.items()
    }
    keyed: dict[str, KeyedCreate] = {}
    with contextlib.ExitStack() as thaw:
        for stack in stacks.values():
            thaw.enter_context(frozen(stack))
        started = time.monotonic()
        for threads in creates.values():
            for thread in threads:
                thread.start()
        for name, stack in stacks.items():
            keyed[name] = keyed_create(stack.url)
        time.sleep(max(0.0, LONG_FREEZE - (time.monotonic() - started)))
    for threads in creates.values():
        for thread in threads:
            thread.join(timeout=60)
            assert not thread.is_alive(), thread.describe()
    for stack in stacks.values():
        wait_ready(stack)
    return LongFreeze(creates, keyed)


def keyed_create(url: str) -> KeyedCreate:
    api_key, idempotency_key = new_key(), f"raw-{new_key()}"
    body = {"model": "echo", "input": "sent once during the freeze"}
    headers = {"x-goog-api-key": api_key, "Idempotency-Key": idempotency_key}
    try:
        status = httpx.post(f"{url}{PATH}", json=body, headers=headers, timeout=REQUEST_TIMEOUT).status_code
    except httpx.HTTPError:
        status = 0
    return KeyedCreate(api_key, idempotency_key, body, status)


def test_a_create_retried_through_a_freeze_is_stored_once_or_not_at_all(
    stacks: dict[str, Stack], long_freeze: LongFreeze
) -> None:
    """The SDK's default retries through an 18 s freeze: "a create that got a 2xx has exactly one stored
    interaction, the one it was given; one that got none (every attempt a 503) has none, and none appears
    later" (after the reaper's look for lost jobs, runner.pickup_seconds)."""
    pickup = CONFIG["runner"]["pickup_seconds"] + CONFIG["runner"]["reaper_interval_seconds"]

    def stored() -> dict[str, list[tuple[str, dict[str, str]]]]:
        return {
            name: [(create.describe(), stored_ids(stacks[name].url, create.api_key)) for create in creates]
            for name, creates in long_freeze.creates.items()
        }

    first = stored()
    time.sleep(pickup + 2.0)
    later = stored()
    assert later == first, {"first": first, "later": later}
    wrong = {
        name: [
            (create.describe(), ids)
            for create, (_, ids) in zip(creates, later[name], strict=True)
            if list(ids) != ([create.interaction_id] if create.succeeded else [])
        ]
        for name, creates in long_freeze.creates.items()
    }
    assert wrong == {name: [] for name in stacks}, "\n".join(
        f"{name}: {create} stored {ids}" for name, found in wrong.items() for create, ids in found
    )
    # the freeze was long enough that some creates spent every retry in it, and short enough that some got
    # in: over both stacks (which of them falls on which side moves with this machine's load)
    every = [create for creates in long_freeze.creates.values() for create in creates]
    assert {create.succeeded for create in every} == {True, False}, [c.describe() for c in every]


def test_an_idempotency_key_used_during_a_freeze_resolves_after_it(
    stacks: dict[str, Stack], long_freeze: LongFreeze
) -> None:
    """A create with an Idempotency-Key during a freeze: "a retry with the same key after the thaw
    succeeds, creating the interaction or returning the one stored, never a 404; it is stored once"."""
    for name, stack in stacks.items():
        keyed = long_freeze.keyed[name]
        headers = {"x-goog-api-key": keyed.api_key, "Idempotency-Key": keyed.idempotency_key}
        with httpx.Client(base_url=stack.url, headers=headers, timeout=REQUEST_TIMEOUT) as http:
            retried = [http.post(PATH, json=keyed.body) for _ in range(2)]
        assert [r.status_code for r in retried] == [200, 200], (name, keyed.status, [r.text for r in retried])
        (one, two) = (r.json()["id"] for r in retried)
        assert one == two and list(stored_ids(stack.url, keyed.api_key)) == [one], (name, keyed.status)

        # the SDK's own retries carried its key: a retry after the thaw answers what it was given, or makes it
        sdk = long_freeze.creates[name][-1]
        body = {"model": "echo", "input": f"sent {sdk.name}"}
        headers = {"x-goog-api-key": sdk.api_key, "Idempotency-Key": f"sdk-{name}"}
        again = httpx.post(f"{stack.url}{PATH}", json=body, headers=headers, timeout=REQUEST_TIMEOUT)
        assert again.status_code == 200, (name, sdk.describe(), again.text)
        if sdk.succeeded:
            assert again.json()["id"] == sdk.interaction_id, (name, sdk.describe())
        assert list(stored_ids(stack.url, sdk.api_key)) == [again.json()["id"]], (name, sdk.describe())


@pytest.fixture(scope="module")
def sentinel_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, Group]]:
    with stack_on_sentinels(tmp_path_factory.mktemp("sentinel-runs"), CONFIG) as both:
        yield both


def test_a_sentinel_failover_loses_no_finished_answer(sentinel_stack: tuple[Stack, Group]) -> None:
    """The primary SIGKILLed while 10 background runs end, the Sentinels promote its replica: "each run
    ends `completed` with its whole answer"."""
    stack, group = sentinel_stack
    first = group.primary()
    answers = Answers(stack.url, new_key())
    for index in range(10):
        answers.create(40 + 8 * index, f"s{index}")
    until(answers.running, timeout=10, interval=0.1)
    stack.redis.stop(kill=True)
    until(lambda: group.primary() != first, timeout=20, interval=0.1)
    until(answers.ended, timeout=40, interval=0.2)
    wrong = answers.wrong()
    answers.close()
    assert wrong == [], "\n".join(wrong)
