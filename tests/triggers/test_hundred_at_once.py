"""100 triggers due in the same second, on a web process and 3 worker processes, with workers SIGKILLed
around that second (one just before it, one just after it, a new one started): each time fires exactly one
execution and one interaction, none twice, none lost, and every one within a few seconds, those a killed
worker held too."""

from __future__ import annotations

import random
import signal
import time
from collections.abc import Iterator
from datetime import datetime

import httpx
import pytest
from redis import Redis as SyncRedis

from ..support import Stack, new_key, running_stack, tenant_of

COUNT = 100


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("triggers-100"), workers=3) as started:
        yield started


def wait_until(at: float) -> None:
    time.sleep(max(0.0, at - time.time()))


def ms_of(stamp: str) -> int:
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


def executions(http: httpx.Client, trigger_id: str) -> list[dict[str, object]]:
    found: list[dict[str, object]] = (
        http.get(f"/v1beta/triggers/{trigger_id}/executions").json().get("trigger_executions", [])
    )
    return found


def test_a_hundred_due_in_one_second_fire_once_each(stack: Stack) -> None:
    key = new_key()
    with httpx.Client(base_url=stack.url, headers={"x-goog-api-key": key}, timeout=30) as http:
        due = int(time.time()) + 12
        body = {
            "interaction": {"agent": "echo", "input": "on the dot"},
            "schedule": f"{due % 60} * * * * *",
            "time_zone": "UTC",
        }
        ids = [http.post("/v1beta/triggers", json=body).json()["id"] for _ in range(COUNT)]
        assert time.time() < due - 1, "creating the triggers took too long for this test's time"
        first, second = random.sample(stack.workers, 2)
        wait_until(due - 0.4)
        first.signal(signal.SIGKILL)
        wait_until(due + 0.05)
        second.signal(signal.SIGKILL)
        stack.start_worker()
        deadline = time.time() + 45
        done: dict[str, list[dict[str, object]]] = {}
        while time.time() < deadline and len(done) < COUNT:
            for trigger_id in ids:
                if trigger_id not in done:
                    found = executions(http, trigger_id)
                    if found and all(each["status"] != "in_progress" for each in found):
                        done[trigger_id] = found
            time.sleep(0.5)
    assert len(done) == COUNT, f"{COUNT - len(done)} triggers did not fire in time"
    late_ms = []
    for found in done.values():
        # exactly one execution, of that second, completed: none twice, none skipped
        assert [(each["id"], each["status"]) for each in found] == [(f"x{due * 1000}", "completed")], found
        late_ms.append(ms_of(str(found[0]["start_time"])) - due * 1000)
    interactions = [str(found[0]["interaction_id"]) for found in done.values()]
    assert len(set(interactions)) == COUNT
    # and the tenant has those interactions, no more
    redis = SyncRedis.from_url(stack.redis_url)
    try:
        prefix = f"ix:{{{tenant_of(key)}}}:"
        stored = {
            name.decode()[len(prefix) :]
            for name in redis.scan_iter(match=f"{prefix}v1_*", count=1000)
            if ":" not in name.decode()[len(prefix) :]
        }
    finally:
        redis.close()
    assert stored == set(interactions)
    late_ms.sort()
    on_time = sum(1 for each in late_ms if each < 1000)
    print(
        f"fire lateness ms: p50 {late_ms[COUNT // 2]}, p99 {late_ms[COUNT * 99 // 100]}, max {late_ms[-1]}; "
        f"{on_time} within 1 s"
    )
    # a fire a killed worker held is taken again once its short mark runs out (store/jobs.py FIRE_MARK_MS,
    # its token FIRE_AGAIN_MS later): about a second late at most, bounded here with a loaded machine's margin
    assert late_ms[0] >= 0 and late_ms[-1] < 5000, late_ms[-10:]
