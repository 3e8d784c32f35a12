"""A Redis Cluster that cannot serve: with `cluster-require-full-coverage yes` (Redis's default) a slot that
no node serves (a failed primary before its replica is promoted; here a slot deleted from every node, which
is the same state, held as long as the test needs it) has every node answer CLUSTERDOWN, for every slot.
Tenants whose node never failed then get a 503 with Retry-After from every route, whichever client the
route uses (a create's script, a read's command, a list), never a 500 with an "unhandled error" line; and
everything serves again once the slot is served."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from server.store import keys

from ..support import TOPOLOGIES, Stack, new_key, tenant_of
from ..waiting import until
from .cluster_nodes import Cluster, stack_on_cluster
from .load import PATH
from .redis_faults import error_lines


@pytest.fixture(scope="module")
def clustered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, Cluster]]:
    with stack_on_cluster(tmp_path_factory.mktemp("cluster-down"), worker=False) as both:
        yield both


def cluster_state(cluster: Cluster, port: int) -> str:
    info = cluster.client(port).cluster("INFO")
    return str(info["cluster_state"])  # type: ignore[index]


@contextlib.contextmanager
def cluster_down(cluster: Cluster, lost: int) -> Iterator[None]:
    """The Cluster down (every node answers CLUSTERDOWN) for the block: `lost` deleted from every node,
    and given back to its node after it, also when the block fails."""
    owner = cluster.owner(lost)
    for port in cluster.ports:
        cluster.client(port).cluster("DELSLOTS", lost)
    until(lambda: {cluster_state(cluster, port) for port in cluster.ports} == {"fail"}, timeout=10)
    try:
        yield
    finally:
        cluster.client(owner).cluster("ADDSLOTS", lost)
    until(lambda: {cluster_state(cluster, port) for port in cluster.ports} == {"ok"}, timeout=30)


def test_a_cluster_down_is_a_503_with_retry_after_for_every_tenant(clustered: tuple[Stack, Cluster]) -> None:
    stack, cluster = clustered
    key = new_key()
    headers = {"x-goog-api-key": key}
    tenant_slot = cluster.slot_of(keys.tenant_prefix(tenant_of(key)))
    with httpx.Client(base_url=stack.url, headers=headers, timeout=15) as client:
        created = client.post(PATH, json={"model": "echo", "input": "before"})
        assert created.status_code == 200, created.text
        stored = created.json()["id"]
        # a slot of another tenant, on whichever node: the tenant's own node never fails
        with cluster_down(cluster, (tenant_slot + 1) % 16384):
            replies = {
                "create (a script)": client.post(PATH, json={"model": "echo", "input": "during"}),
                "background create": client.post(
                    PATH, json={"model": "echo", "input": "during", "background": True}
                ),
                "get (a command)": client.get(f"{PATH}/{stored}"),
                "list": client.get(PATH),
                "delete": client.delete(f"{PATH}/{stored}"),
            }
            wrong = {what: (r.status_code, r.text) for what, r in replies.items() if r.status_code != 503}
            assert wrong == {}
            assert all(int(r.headers["retry-after"]) >= 1 for r in replies.values())
            assert all(r.json()["error"]["status"] == "UNAVAILABLE" for r in replies.values())

        # served again: the client that saw the Cluster down reads its map again
        def served() -> bool:
            return client.get(f"{PATH}/{stored}").status_code == 200

        until(served, timeout=15, interval=0.2)
        after = client.post(PATH, json={"model": "echo", "input": "after"})
        assert after.status_code == 200, after.text
    log = stack.servers[0][0].log()
    assert "unhandled" not in log.lower(), log[-4000:]
    assert "Traceback" not in log, log[-4000:]


def test_a_run_whose_start_meets_the_cluster_down_waits_for_it(
    clustered: tuple[Stack, Cluster], tmp_path: Path
) -> None:
    """A job taken while the Cluster is down (its worker was stopped when it was queued; a Cluster node
    failing over while the queue's Redis hands out jobs): its run's claim is tried again until the Cluster
    serves, and the run completes, with no ERROR (the job failed, and its run waited for the reaper)."""
    _stack, cluster = clustered
    stack = Stack(tmp_path / "stack", topology=TOPOLOGIES["tcp-workers"])
    try:
        stack.start_redis()
        env = {"REDIS_URL": cluster.url, "REDIS_QUEUE_URL": stack.redis_url}
        stack.start_server(**env)
        worker = stack.start_worker(**env)
        stack.wait_ready()
        key = new_key()
        with httpx.Client(base_url=stack.url, headers={"x-goog-api-key": key}, timeout=15) as client:
            worker.signal(signal.SIGSTOP)
            try:
                created = client.post(PATH, json={"model": "echo", "input": "later", "background": True})
                assert created.status_code == 200, created.text
                lost = (cluster.slot_of(keys.tenant_prefix(tenant_of(key))) + 1) % 16384
                with cluster_down(cluster, lost):
                    worker.signal(signal.SIGCONT)
                    until(lambda: "the start of interaction" in worker.log() or "ERROR" in worker.log())
            finally:
                worker.signal(signal.SIGCONT)
            item = f"{PATH}/{created.json()['id']}"
            until(lambda: client.get(item).json()["status"] == "completed", timeout=15, interval=0.1)
        assert error_lines(stack) == []
    finally:
        stack.stop()
