"""A Redis Cluster primary SIGKILLed under load: three primaries with a replica each, a web process with its
worker inside and a worker process (cluster_nodes.stack_on_cluster). The Cluster sees the primary failing
(NODE_TIMEOUT_MS), promotes its replica, and meanwhile the other nodes answer CLUSTERDOWN for every slot:
every client gets a clean 503 or its answer, every create that was answered 200 is stored, and every
background run ends `completed` with its whole answer, those whose records were on the killed node too."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from server.store import keys

from ..support import Stack, new_key, tenant_of
from ..waiting import until
from .cluster_nodes import Cluster, stack_on_cluster
from .load import PATH, REQUEST_TIMEOUT, Answers, Creator, Reader, answer_of, outcomes
from .redis_faults import error_lines

RUNS = 10
UNENDED = ("queued", "in_progress")
#: a run's lease as shipped: a foreground create retries the write of its record through an outage for two
#: leases (runner/sinks.py), so it outlasts the failover instead of giving up in the middle of it
CONFIG: dict[str, dict[str, Any]] = {"runner": {"lease_seconds": 10.0, "heartbeat_seconds": 1.0}}


@pytest.fixture(scope="module")
def failing_over(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, Cluster]]:
    with stack_on_cluster(tmp_path_factory.mktemp("cluster-failover"), config=CONFIG, replicas=1) as both:
        yield both


def key_on(cluster: Cluster, primary: int) -> str:
    """A fresh API key whose tenant's records (its hash tag's slot) are on the primary on `primary`."""
    for _ in range(500):
        key = new_key()
        if cluster.owner(cluster.slot_of(keys.tenant_prefix(tenant_of(key)))) == primary:
            return key
    raise AssertionError(f"no tenant found on {primary}")


def test_a_primary_killed_under_load_fails_cleanly_and_loses_nothing(
    failing_over: tuple[Stack, Cluster],
) -> None:
    stack, cluster = failing_over
    victim, spared = cluster.primaries()[:2]
    replica = cluster.replica_of(victim)
    # the creators and the reader of a tenant of the killed node, then those of one whose node stays up
    names = {"killed node": victim, "other node": spared}
    traffic = {node: traffic_of(stack.url, key_on(cluster, node)) for node in names.values()}
    threads = [thread for each in traffic.values() for thread in each]
    # background runs of a tenant of the killed node, each to end 3-6.6 s after its start (echo-slow's
    # 50 ms a word): some within the failover, some after it
    answers = Answers(stack.url, key_on(cluster, victim))
    for index in range(RUNS):
        answers.create(60 + 8 * index, f"c{index}")
    until(answers.running, timeout=10, interval=0.1)
    for thread in threads:
        thread.start()
    time.sleep(0.5)
    killed_at = time.monotonic()
    cluster.kill(victim)
    cluster.wait_promoted(replica)
    promoted = time.monotonic() - killed_at
    # served again: the killed node's tenant gets its answers from the promoted replica
    hit = traffic[victim][0]
    until(lambda: any(at > killed_at + promoted for at, _ in hit.acked), timeout=20, interval=0.1)
    time.sleep(1.0)
    for thread in threads:
        thread.stop()

    # every request failed cleanly and soon (a 503, never a 500, a hang or a broken connection)
    failures, acked = outcomes(threads)
    failed = {name: sum(len(t.failed) for t in traffic[node]) for name, node in names.items()}
    slowest = max((took for _, _, took in failures), default=0.0)
    print(f"promoted after {promoted:.2f} s; of {len(failures) + len(acked)} requests, failed: {failed}")
    print(f"the slowest failure took {slowest:.2f} s")
    assert failed["killed node"] > 0, "the kill met no request"

    # every create answered 200 is stored, once; every background run ends with its whole answer
    until(answers.ended, timeout=40, interval=0.2)
    wrong = answers.wrong()
    answers.close()
    assert wrong == [], "\n".join(wrong)
    for creators in traffic.values():
        for creator in creators[:2]:
            check_stored(stack.url, creator)
    check_logs(stack)


def check_logs(stack: Stack) -> None:
    """Nothing was logged as an ERROR (nothing failed), nor as an unhandled error (a 500)."""
    assert error_lines(stack) == []
    for proc in [*(proc for proc, _url in stack.servers), *stack.workers]:
        log = proc.log()
        assert "unhandled" not in log.lower() and "Traceback" not in log, log[-4000:]


def traffic_of(url: str, api_key: str) -> list[Creator]:
    """A tenant's traffic: foreground creates, background creates, and reads of one interaction."""
    with httpx.Client(base_url=url, headers={"x-goog-api-key": api_key}, timeout=REQUEST_TIMEOUT) as http:
        read = http.post(PATH, json={"model": "echo", "input": "read"})
    assert read.status_code == 200, read.text
    return [
        Creator(url, api_key, {"model": "echo", "input": "now"}),
        Creator(url, api_key, {"model": "echo", "input": "later", "background": True}, pause=0.05),
        Reader(url, api_key, read.json()["id"]),
    ]


def check_stored(url: str, creator: Creator) -> None:
    """Each interaction `creator` was answered 200 for is stored, once, and ends `completed` with its answer
    (echo answers its input), a background one once its run is over."""
    ids = [interaction_id for _, interaction_id in creator.acked]
    assert len(set(ids)) == len(ids)
    headers = {"x-goog-api-key": creator.client.headers["x-goog-api-key"]}
    with httpx.Client(base_url=url, headers=headers, timeout=REQUEST_TIMEOUT) as http:
        found: dict[str, dict[str, Any]] = {}

        def ended() -> bool:
            for interaction_id in [i for i in ids if i not in found or found[i]["status"] in UNENDED]:
                reply = http.get(f"{PATH}/{interaction_id}")
                assert reply.status_code == 200, f"acknowledged {interaction_id}: {reply.text}"
                found[interaction_id] = reply.json()
            return not [i for i, stored in found.items() if stored["status"] in UNENDED]

        until(ended, timeout=40, interval=0.5)
    wrong = {i: (f["status"], answer_of(f)) for i, f in found.items()}
    wrong = {i: got for i, got in wrong.items() if got != ("completed", creator.body["input"])}
    assert wrong == {}, wrong
