"""Redis Sentinel (REDIS_URL=redis+sentinel://…): a primary, a replica and three Sentinels on loopback, a web
process and a worker process following them. Under load (foreground creates, background creates, a
followed stream), the primary is killed: the Sentinels promote the replica, and the processes follow. Then
back, and then once more with triggers due through the failover."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis

from server.store import keys
from server.store.replica_acks import DEGRADED_SECONDS
from server.store.triggers import marker

from ..support import Stack, new_key, tenant_of
from ..waiting import until
from . import due_triggers
from .load import PATH, Creator, Follower, outcomes
from .sentinels import Group, stack_on_sentinels

#: with a replica acknowledging every write, a failover loses nothing that was acknowledged
CONFIG = {"store": {"replica_acks": 1, "replica_ack_timeout_ms": 500}}
#: triggers firing through the third test's failover
TRIGGERS = 10


@pytest.fixture(scope="module")
def failover(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, Group]]:
    with stack_on_sentinels(tmp_path_factory.mktemp("sentinel"), CONFIG) as both:
        yield both


def test_a_failover_loses_nothing_acknowledged_and_fails_cleanly(failover: tuple[Stack, Group]) -> None:
    stack, group = failover
    key = new_key()
    first_primary = group.primary()
    long_run = httpx.post(
        f"{stack.url}/v1beta/interactions",
        json={"model": "echo-slow", "input": "word " * 160, "background": True},
        headers={"x-goog-api-key": key},
        timeout=10,
    ).json()["id"]
    follower = Follower(stack.url, key, long_run, within=60)
    creators = [
        Creator(stack.url, key, {"model": "echo", "input": "foreground"}),
        Creator(stack.url, key, {"model": "echo", "input": "stored", "stream": False, "store": True}),
        Creator(stack.url, key, {"model": "echo", "input": "later", "background": True}, pause=0.05),
    ]
    for thread in [follower, *creators]:
        thread.start()
    time.sleep(1.5)
    killed_at = time.monotonic()
    stack.redis.stop(kill=True)
    until(lambda: group.primary() != first_primary, timeout=20, interval=0.1)
    until(lambda: any(at > killed_at for at, _ in creators[0].acked), timeout=20, interval=0.1)
    recovered = min(at for at, _ in creators[0].acked if at > killed_at) - killed_at
    time.sleep(3)
    for creator in creators:
        creator.stop()
    follower.join(timeout=60)

    # every request during the switch failed cleanly and soon: a 503, never a hang or a broken connection
    failures, acked = outcomes(creators)
    report = f"recovered in {recovered:.2f} s; {len(failures)} failed of {len(failures) + len(acked)}"
    print(report, "; stream resumed", follower.resumed, "times; cut by", follower.cuts)
    assert recovered < 15.0, report

    # nothing acknowledged was lost; every background interaction ends (the worker follows the failover)
    with httpx.Client(base_url=stack.url, headers={"x-goog-api-key": key}, timeout=10) as client:
        missing = [i for i in acked if client.get(f"/v1beta/interactions/{i}").status_code != 200]
        assert missing == [], f"{len(missing)} acknowledged interactions lost"
        background = [i for _, i in creators[2].acked]

        def unended() -> list[str]:
            return [i for i in background if client.get(f"{PATH}/{i}").json()["status"] == "in_progress"]

        try:
            until(lambda: not unended(), timeout=45, interval=0.5)
        except TimeoutError:
            raise AssertionError(stuck(stack, group, tenant_of(key), unended())) from None

    # every process listens for cancels on the new primary, and a cancel stops a run at once
    promoted = redis.Redis(host="127.0.0.1", port=group.primary())
    until(lambda: listeners(promoted) >= 2)
    with httpx.Client(base_url=stack.url, headers={"x-goog-api-key": key}, timeout=10) as client:
        running = client.post(PATH, json={"model": "echo-slow", "input": "word " * 400, "background": True})
        item = f"{PATH}/{running.json()['id']}"
        until(lambda: client.get(item).json()["status"] == "in_progress", timeout=15)
        assert client.post(f"{item}/cancel").json()["status"] == "cancelled"

    # the followed stream reached its end, every event once and in order
    assert follower.last_type == "interaction.completed"
    numbers = [int(event_id.removeprefix("evt_")) for event_id in follower.seen]
    assert numbers == list(range(1, len(numbers) + 1))


def test_the_old_primary_returns_as_a_replica_and_a_second_failover_goes_back(
    failover: tuple[Stack, Group],
) -> None:
    """After the first test's failover: the old primary restarts, the Sentinels make it a replica of the new
    one, and killing the new one promotes it again; the processes follow both ways."""
    stack, group = failover
    key = new_key()
    stack.redis.start()
    until(lambda: group.replicas() >= 1, timeout=30, interval=0.2)
    until(lambda: group.replicating(stack.redis.port), timeout=30, interval=0.2)
    # the primary had no replica since the first failover: its writes went on unacknowledged, and wait
    # again once that spell is over
    time.sleep(DEGRADED_SECONDS)
    creator = Creator(stack.url, key, {"model": "echo", "input": "again"})
    creator.start()
    time.sleep(1.0)
    killed_at = time.monotonic()
    group.kill_replica()
    until(lambda: group.primary() == stack.redis.port, timeout=20, interval=0.1)
    until(lambda: any(at > killed_at for at, _ in creator.acked), timeout=20, interval=0.1)
    time.sleep(1.0)
    creator.stop()
    assert {outcome for _, outcome, _ in creator.failed} <= {"503"}, creator.failed
    with httpx.Client(base_url=stack.url, headers={"x-goog-api-key": key}, timeout=10) as client:
        missing = [i for _, i in creator.acked if client.get(f"{PATH}/{i}").status_code != 200]
    assert missing == [], f"{len(missing)} acknowledged interactions lost"


def test_triggers_due_through_a_failover_fire_once_each(failover: tuple[Stack, Group]) -> None:
    """After the second test's failover back: the group's replica is started again, then triggers fire
    every 2 s while the primary is killed. Each time makes exactly one execution and at most one
    interaction, none twice; none is lost (the fire job of each next time was on the replica when the
    primary died: replica_acks); the times due while there was no primary fire once the new one answers,
    late; and every trigger fires on after the failover."""
    stack, group = failover
    group.restart_replica()
    time.sleep(DEGRADED_SECONDS)  # the replica acknowledges writes again
    key = new_key()
    period_ms = 2000
    with httpx.Client(base_url=stack.url, headers={"x-goog-api-key": key}, timeout=10) as http:
        ids = due_triggers.make(http, TRIGGERS, "*/2 * * * * *")
        time.sleep(4.5)
        killed_ms = int(time.time() * 1000)
        stop_primary(stack, group)
        until(
            lambda: http.get(f"{due_triggers.TRIGGERS}/{ids[0]}").status_code == 200, timeout=30, interval=0.2
        )
        back_ms = int(time.time() * 1000)
        time.sleep(6)
        for trigger_id in ids:
            assert (
                http.patch(f"{due_triggers.TRIGGERS}/{trigger_id}", json={"status": "paused"}).status_code
                == 200
            )

        def ended() -> dict[str, list[dict[str, Any]]] | None:
            found = {trigger_id: due_triggers.executions(http, trigger_id) for trigger_id in ids}
            return None if any(e["status"] == "in_progress" for f in found.values() for e in f) else found

        done = until(ended, timeout=30, interval=0.5)
    statuses = Counter((e["status"], e.get("error")) for found in done.values() for e in found)
    print(f"failover {back_ms - killed_ms} ms; executions by status and error {dict(statuses)}")
    made = due_triggers.made_by_executions(redis.Redis(host="127.0.0.1", port=group.primary()), key)
    for trigger_id, found in done.items():
        times = [int(e["id"][1:]) for e in found]
        assert times == sorted(set(times)) and not due_triggers.gaps(times, period_ms), (trigger_id, times)
        assert times[0] < killed_ms and times[-1] > back_ms, (trigger_id, times, killed_ms, back_ms)
        ran = [e for e in found if e.get("interaction_id")]
        # each execution made one interaction, and no second one (an interaction names its execution)
        assert all(made[marker(trigger_id, e["id"])] == 1 for e in ran), (trigger_id, made)
        assert any(e["status"] == "completed" and int(e["id"][1:]) > back_ms for e in found), found
    assert sum(made.values()) == sum(1 for f in done.values() for e in f if e.get("interaction_id"))


def stop_primary(stack: Stack, group: Group) -> None:
    """SIGKILL whichever Redis is the primary now, and wait until the Sentinels have promoted the other."""
    first = group.primary()
    if first == stack.redis.port:
        stack.redis.stop(kill=True)
    else:
        group.kill_replica()
    until(lambda: group.primary() != first, timeout=20, interval=0.1)


def stuck(stack: Stack, group: Group, tenant: str, interaction_ids: list[str]) -> str:
    """What the store holds of runs that never ended (their record's run fields, their job's keys) and
    the worker's last log lines: what a failure of this test needs to be understood."""
    primary = redis.Redis(host="127.0.0.1", port=group.primary(), decode_responses=True)
    held = []
    for interaction_id in interaction_ids[:5]:
        fields = [keys.Field.STATUS, keys.Field.FENCE, keys.Field.ATTEMPTS]
        run: list[str | None] = primary.hmget(keys.interaction(tenant, interaction_id), fields)  # type: ignore[assignment]
        job = keys.job_id(tenant, interaction_id, int(run[1] or 0))
        marks = primary.exists(keys.arq_job(job)), primary.exists(keys.arq_in_progress(job))
        held.append(f"{interaction_id}: status, fence, attempts {run}; job {job} (data, taken) {marks}")
    lines = stack.workers[0].log().splitlines()[-40:]
    return f"{len(interaction_ids)} background runs never ended:\n" + "\n".join([*held, *lines])


def listeners(primary: redis.Redis) -> int:
    """Processes subscribed to the cancel channel on `primary` (the web process and the worker)."""
    counts: list[tuple[bytes, int]] = primary.pubsub_numsub(keys.CANCEL_CHANNEL)  # type: ignore[assignment]
    return dict(counts)[keys.CANCEL_CHANNEL.encode()]
