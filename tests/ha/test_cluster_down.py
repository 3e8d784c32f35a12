"""A Redis Cluster that cannot serve: with `cluster-require-full-coverage yes` (Redis's default) a slot that
no node serves (a failed primary before its replica is promoted; here a slot deleted from every node, which
is the same state, held as long as the test needs it) has every node answer CLUSTERDOWN, for every slot.
Tenants whose node never failed then get a 503 with Retry-After from every route, whichever client the
route uses (a create's script, a read's command, a list), never a 500 with an "unhandled error" line; and
everything serves again once the slot is served."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from server.store import keys

from ..support import Stack, new_key, tenant_of
from ..waiting import until
from .cluster_nodes import Cluster, stack_on_cluster
from .load import PATH


@pytest.fixture(scope="module")
def clustered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, Cluster]]:
    with stack_on_cluster(tmp_path_factory.mktemp("cluster-down"), worker=False) as both:
        yield both


def cluster_state(cluster: Cluster, port: int) -> str:
    info = cluster.client(port).cluster("INFO")
    return str(info["cluster_state"])  # type: ignore[index]


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
        lost = (tenant_slot + 1) % 16384
        owner = cluster.owner(lost)
        for port in cluster.ports:
            cluster.client(port).cluster("DELSLOTS", lost)
        until(lambda: {cluster_state(cluster, port) for port in cluster.ports} == {"fail"}, timeout=10)
        try:
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
        finally:
            cluster.client(owner).cluster("ADDSLOTS", lost)
        until(lambda: {cluster_state(cluster, port) for port in cluster.ports} == {"ok"}, timeout=30)

        # served again: the client that saw the Cluster down reads its map again
        def served() -> bool:
            return client.get(f"{PATH}/{stored}").status_code == 200

        until(served, timeout=15, interval=0.2)
        after = client.post(PATH, json={"model": "echo", "input": "after"})
        assert after.status_code == 200, after.text
    log = stack.servers[0][0].log()
    assert "unhandled" not in log.lower(), log[-4000:]
    assert "Traceback" not in log, log[-4000:]
