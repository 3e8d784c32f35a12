"""The Redis Cluster harness (cluster_nodes.py) itself, with plain redis-py: a slot moved by hand while a
cluster client keeps writing to it loses nothing, and what a client that follows no redirection sees while
the slot is half-moved (ASK, MOVED, TRYAGAIN; BUSYKEY when the target is written behind the source's
back)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.cluster import RedisCluster

from ..waiting import until
from .cluster_nodes import Cluster, redis_cluster


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with redis_cluster(tmp_path / "cluster") as started:
        yield started


class Writer(threading.Thread):
    """SETs then GETs keys of one hash tag through RedisCluster, old keys and new ones, until stopped;
    remembers the last value written to each key and anything that went wrong."""

    def __init__(self, port: int, keys: list[str], tag: str) -> None:
        super().__init__(name="writer", daemon=True)
        self.port = port
        self.keys = keys
        self.tag = tag
        self.written: dict[str, str] = {}
        self.failures: list[str] = []
        self.slowest = 0.0
        self._stopping = threading.Event()

    def run(self) -> None:
        client = RedisCluster(host="127.0.0.1", port=self.port, decode_responses=True)
        try:
            for step in range(1_000_000):
                if self._stopping.is_set():
                    return
                # one write in four makes a key the source never had: during the move it is created on the
                # target (the source answers ASK for a key it does not hold)
                key = f"{{{self.tag}}}:new:{step}" if step % 4 == 0 else self.keys[step % len(self.keys)]
                self._write(client, key, f"written-{step}")
        finally:
            client.close()

    def _write(self, client: RedisCluster, key: str, value: str) -> None:
        began = time.monotonic()
        try:
            client.set(key, value)
            self.written[key] = value
            read = client.get(key)
            if read != value:
                self.failures.append(f"{key}: wrote {value}, read {read}")
        except redis.RedisError as error:
            self.failures.append(f"{key}: {error!r}")
        self.slowest = max(self.slowest, time.monotonic() - began)

    def stop(self) -> None:
        self._stopping.set()
        self.join(timeout=10)


def test_a_slot_moved_under_load_loses_nothing(cluster: Cluster) -> None:
    tagged = [f"{{t1}}:{index}" for index in range(200)]
    elsewhere = [f"elsewhere:{index}" for index in range(100)]
    slot = cluster.slot_of(tagged[0])
    source = cluster.owner(slot)
    target = next(port for port in cluster.ports if port != source)
    expected = {key: f"first-{key}" for key in tagged + elsewhere}
    with RedisCluster(host="127.0.0.1", port=cluster.ports[0], decode_responses=True) as client:
        for key, value in expected.items():
            client.set(key, value)

        writer = Writer(cluster.ports[0], tagged, "t1")
        writer.start()
        # 200 keys, 10 a batch, 10 ms a key: the slot stays half-moved for about 2 s
        migration = cluster.start_migration(slot, target, per_key_pause=0.01)
        moved = migration.join(timeout=30)
        time.sleep(0.2)  # a few writes after the move, through the MOVED the source now answers
        writer.stop()
        # the writer went to the target for the moved keys: each time, ASKING then the command
        stats: dict[str, dict[str, int]] = cluster.client(target).info("commandstats")  # type: ignore[assignment]
        askings = stats.get("cmdstat_asking", {}).get("calls", 0)
        print(
            f"{moved} keys moved; {len(writer.written)} keys written; {askings} ASKING on the target; "
            f"slowest SET+GET {writer.slowest * 1000:.1f} ms"
        )

        assert not writer.failures, writer.failures[:10]
        assert moved >= len(tagged)
        assert askings > 0
        expected.update(writer.written)
        assert all(client.get(key) == expected[key] for key in elsewhere)
    assert cluster.owner(slot) == target
    on_target = cluster.client(target)
    assert {key: on_target.get(key) for key in expected if key.startswith("{t1}")} == {
        key: value for key, value in expected.items() if key.startswith("{t1}")
    }
    assert cluster.client(source).cluster("COUNTKEYSINSLOT", slot) == 0
    cluster.check()


def test_a_half_moved_slot_as_a_plain_client_sees_it(cluster: Cluster) -> None:
    keys = [f"{{t2}}:{index}" for index in range(40)]
    slot = cluster.slot_of(keys[0])
    source_port = cluster.owner(slot)
    target_port = next(port for port in cluster.ports if port != source_port)
    source, target = cluster.client(source_port), cluster.client(target_port)
    for key in keys:
        source.set(key, key)
    # 2 keys a batch, 50 ms a key: about 2 s to go through the 40
    migration = cluster.start_migration(slot, target_port, per_key_pause=0.05, batch=2)
    until(lambda: migration.moved >= 2, timeout=5)
    gone = until(lambda: next((key for key in keys if not _held(source, key)), None), timeout=5)
    held = [key for key in keys if _held(source, key)]

    # the source answers for the keys it still holds and sends the client to the target for the others
    with pytest.raises(redis.ResponseError, match=f"^ASK {slot} 127.0.0.1:{target_port}$"):
        source.get(gone)
    # a command on several keys, some moved and some not, can be served by neither node for now
    with pytest.raises(redis.ResponseError, match=r"^TRYAGAIN"):
        source.mget(gone, held[-1])
    # the target does not serve the slot yet: without ASKING it sends the client back to the source
    with pytest.raises(redis.ResponseError, match=f"^MOVED {slot} 127.0.0.1:{source_port}$"):
        target.get(gone)
    asking = redis.Redis(
        host="127.0.0.1", port=target_port, decode_responses=True, single_connection_client=True
    )
    with asking:
        asking.execute_command("ASKING")  # type: ignore[no-untyped-call]
        assert asking.get(gone) == gone
        # a client that writes to the target keys the source still holds: the move meets them and stops
        for key in held:
            asking.execute_command("ASKING")  # type: ignore[no-untyped-call]
            asking.set(key, "written behind the source's back")
    with pytest.raises(redis.ResponseError, match="BUSYKEY"):
        migration.join(timeout=10)
    with pytest.raises(AssertionError, match="slots are open"):
        cluster.check()


def _held(node: redis.Redis, key: str) -> bool:
    """Whether `node` holds `key` itself (a node migrating the key's slot answers ASK for a key it lacks)."""
    try:
        node.get(key)
    except redis.ResponseError as error:
        assert str(error).startswith("ASK "), error
        return False
    return True
