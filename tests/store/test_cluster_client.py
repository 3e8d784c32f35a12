"""The store's clients of a Redis Cluster (store/cluster.py, as connection.build_records makes them) when a
primary dies: until the Cluster calls it failing (NODE_TIMEOUT_MS, here made long) the other nodes serve,
and so must the clients, for every key those nodes hold. redis-py reads its map again after the dead node's
connection error, and with it its command table, from the map's first primary: that one is killed here."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest
from redis.asyncio.cluster import RedisCluster

from server.store import connection
from server.store.outage import UNAVAILABLE

from ..ha.cluster_nodes import Cluster, redis_cluster


def key_on(cluster: Cluster, prefix: str, *, on: int, served: bool) -> str:
    """A key whose slot is served by the node on `on` (or, not `served`, by another one)."""
    for index in range(1000):
        key = f"{prefix}{index}"
        if (cluster.owner(cluster.slot_of(key)) == on) == served:
            return key
    raise AssertionError(f"no key found for {on}")


async def test_a_dead_primary_fails_only_the_commands_of_its_own_slots(tmp_path: Path) -> None:
    with redis_cluster(tmp_path / "nodes") as cluster:
        # the survivors would soon call the dead node failing and, with no replica of it, answer CLUSTERDOWN
        for port in cluster.ports:
            cluster.client(port).config_set("cluster-node-timeout", 60_000)
        clients = connection.build_records(connection.parse(cluster.url))
        assert clients is not None
        try:
            commands, blocking = clients
            await commands.ping()  # the map is read
            first = int(cast(RedisCluster, commands).get_default_node().port)
            dead = key_on(cluster, "dead", on=first, served=True)
            kept, stream = (key_on(cluster, name, on=first, served=False) for name in ("kept", "log"))
            await commands.set(kept, "kept")
            await commands.xadd(stream, {"n": "1"})
            cluster.kill(first)
            for client in clients:
                with pytest.raises(UNAVAILABLE):
                    await client.get(dead)  # the connection error after which each reads the map again
            assert await commands.get(kept) == b"kept"
            # XREAD's keys are found by asking a node (COMMAND GETKEYS): one that answers
            [(name, entries)] = await blocking.xread({stream: "0"})
            assert name == stream.encode() and [fields for _, fields in entries] == [{b"n": b"1"}]
        finally:
            await connection.close(*clients)
