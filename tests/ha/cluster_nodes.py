"""A Redis Cluster on loopback for the tests: `size` primaries, each with `replicas` replicas (none unless
asked), each node a real redis-server process with its nodes file and log in a temporary directory, the
slots spread by `redis-cli --cluster create`. A slot can be moved by hand, key by key, by the documented
resharding protocol, slowly enough that a test keeps it half-moved while load runs; a primary can be killed,
and its replica is promoted by the Cluster itself."""

from __future__ import annotations

import contextlib
import functools
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import redis
from redis.crc import key_slot

from server.launch.redis_process import free_port

from ..support import TOPOLOGIES, Stack
from ..waiting import until
from .migration import Migration
from .sentinels import in_sync

SLOTS = 16384
#: how long a silent node takes to be called failing: short, the tests kill nodes and want to see it soon
NODE_TIMEOUT_MS = 2000
#: MIGRATE's timeout for its connection to the target, per batch
MIGRATE_TIMEOUT_MS = 5000

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")

#: (first slot, last slot, port of the primary serving them), in slot order
SlotMap = tuple[tuple[int, int, int], ...]


class Cluster:
    def __init__(self, workdir: Path, size: int = 3, replicas: int = 0) -> None:
        self.workdir = workdir
        self.replicas = replicas
        # the cluster bus defaults to port + 10000, which is past 65535 for a good part of the ephemeral
        # range free_port draws from: each node is given a bus port of its own instead
        nodes = size * (1 + replicas)
        ports = _free_ports(2 * nodes)
        #: every node's port, primaries and replicas (which is which: `primaries`, `replica_of`)
        self.ports, self.bus_ports = ports[:nodes], ports[nodes:]
        #: the nodes killed (`kill`): they answer nothing, and are asked nothing
        self.killed: set[int] = set()
        self.processes: dict[int, subprocess.Popen[bytes]] = {}
        self._clients: dict[int, redis.Redis] = {}
        self._ids: dict[int, str] = {}

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{port}" for port in self.ports)
        return f"redis+cluster://{hosts}"

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        for port, bus_port in zip(self.ports, self.bus_ports, strict=True):
            self._spawn(port, bus_port)
        for port in self.ports:
            until(functools.partial(_answers, self.client(port)), timeout=15)
        _redis_cli(
            "--cluster", "create", *(f"127.0.0.1:{port}" for port in self.ports),
            "--cluster-replicas", str(self.replicas), "--cluster-yes",
        )  # fmt: skip
        # `--cluster create` returns once the nodes have met, but each learns the others' slots by gossip
        # and turns cluster_state:ok on its own: until then a node can answer CLUSTERDOWN or redirect wrong
        until(self._settled, timeout=30, interval=0.05)
        # a replica that has not copied its primary yet could not take over from it
        for port in set(self.ports) - set(self.primaries()):
            until(functools.partial(in_sync, self.client(port)), timeout=30, interval=0.05)

    @property
    def alive(self) -> list[int]:
        return [port for port in self.ports if port not in self.killed]

    def primaries(self) -> list[int]:
        """The ports of the primaries serving slots now, as the first live node sees them."""
        return sorted({port for _, _, port in _slot_map(self.client(self.alive[0]))})

    def replica_of(self, primary: int) -> int:
        """The port of a live replica of the primary on `primary`."""
        return next(port for port in self.alive if _primary_of(self.client(port)) == primary)

    def kill(self, port: int) -> None:
        """SIGKILL the node on `port`, as a crash would (nothing written, no goodbye to the other nodes)."""
        self.killed.add(port)
        self.processes[port].kill()
        self.processes[port].wait()
        self._clients.pop(port).close()

    def wait_promoted(self, replica: int, timeout: float = 30.0) -> None:
        """Until the node on `replica` serves slots as a primary and every live node agrees the cluster is
        ok again (the other primaries voted it in once the killed one was seen failing: NODE_TIMEOUT_MS)."""
        until(lambda: self._settled() and replica in self.primaries(), timeout=timeout, interval=0.05)

    def client(self, port: int) -> redis.Redis:
        """A client of the one node on `port` (answers decoded to str); it follows no redirection."""
        if port not in self._clients:
            self._clients[port] = redis.Redis(host="127.0.0.1", port=port, decode_responses=True)
        return self._clients[port]

    def node_id(self, port: int) -> str:
        if port not in self._ids:
            self._ids[port] = str(self.client(port).cluster("MYID"))
        return self._ids[port]

    def owner(self, slot: int) -> int:
        """The port of the primary serving `slot`, as every node sees it (they must agree)."""
        views = {port: _owner_in(_slot_map(self.client(port)), slot) for port in self.alive}
        (owner, *others) = set(views.values())
        assert owner is not None and not others, f"who serves slot {slot}, by node: {views}"
        return owner

    @staticmethod
    def slot_of(key: str) -> int:
        return key_slot(key.encode())

    def migrate_slot(self, slot: int, to_port: int, *, per_key_pause: float = 0.0, batch: int = 10) -> int:
        """Move `slot` to the node on `to_port`, key by key; how many keys moved. A key that the target
        already holds (written there during the move) fails the move with BUSYKEY: nothing is replaced."""
        return self._migrate(slot, to_port, per_key_pause, batch, lambda moved: None)

    def start_migration(
        self, slot: int, to_port: int, *, per_key_pause: float = 0.0, batch: int = 10
    ) -> Migration:
        """`migrate_slot` in a background thread."""
        return Migration(
            functools.partial(self._migrate, slot, to_port, per_key_pause, batch), name=f"migrate-{slot}"
        )

    def _migrate(
        self, slot: int, to_port: int, pause: float, batch: int, progress: Callable[[int], None]
    ) -> int:
        from_port = self.owner(slot)
        if from_port == to_port:
            raise ValueError(f"slot {slot} is already served by {to_port}")
        source, target = self.client(from_port), self.client(to_port)
        # the order matters: the target accepts the slot's keys (from ASKING clients) before the source
        # starts sending clients there
        target.cluster("SETSLOT", slot, "IMPORTING", self.node_id(from_port))
        source.cluster("SETSLOT", slot, "MIGRATING", self.node_id(to_port))
        moved = 0
        while keys := _keys_in(source, slot, batch):
            # no REPLACE: a key already on the target means a client wrote there behind the source's back
            source.migrate("127.0.0.1", to_port, keys, 0, MIGRATE_TIMEOUT_MS)
            moved += len(keys)
            progress(len(keys))
            time.sleep(pause * len(keys))
        # the target first, so that it answers for the slot before the source starts sending MOVED there;
        # the other nodes would learn it by gossip, told directly they redirect right away
        others = [port for port in self.alive if port not in (from_port, to_port)]
        for port in [to_port, from_port, *others]:
            self.client(port).cluster("SETSLOT", slot, "NODE", self.node_id(to_port))
        return moved

    def check(self) -> str:
        """`redis-cli --cluster check`'s report; an AssertionError if it finds anything wrong."""
        report = _redis_cli("--cluster", "check", f"127.0.0.1:{self.alive[0]}", must_succeed=False)
        # an open slot (importing or migrating on some node) is a [WARNING], a disagreement an [ERR]
        wrong = "[ERR]" in report or "[WARNING]" in report or "slots are open" in report
        if wrong or f"[OK] All {SLOTS} slots covered." not in report:
            raise AssertionError(f"redis-cli --cluster check:\n{report}")
        return report

    def cpu_seconds(self) -> float:
        """The CPU time (system and user) the nodes have used so far, together."""
        total = 0.0
        for port in self.alive:
            info: dict[str, Any] = self.client(port).info("cpu")  # type: ignore[assignment]
            total += float(info["used_cpu_sys"]) + float(info["used_cpu_user"])
        return total

    def _settled(self) -> bool:
        """Whether every node says the cluster is ok and every node has the same map of all the slots."""
        try:
            states = [_state(self.client(port)) for port in self.alive]
            maps = {_slot_map(self.client(port)) for port in self.alive}
        except redis.RedisError:
            return False
        if set(states) != {"ok"} or len(maps) != 1:
            return False
        (slot_map,) = maps
        return sum(last - first + 1 for first, last, _ in slot_map) == SLOTS

    def _spawn(self, port: int, bus_port: int) -> None:
        binary = shutil.which("redis-server")
        assert binary is not None
        log = self.workdir / f"node-{port}.log"
        with log.open("ab") as output:  # the child has its own copy of the descriptor
            self.processes[port] = subprocess.Popen(
                [
                    binary, "--port", str(port), "--bind", "127.0.0.1",
                    "--cluster-enabled", "yes", "--cluster-port", str(bus_port),
                    "--cluster-config-file", str(self.workdir / f"nodes-{port}.conf"),
                    "--cluster-node-timeout", str(NODE_TIMEOUT_MS),
                    "--save", "", "--appendonly", "no", "--dir", str(self.workdir),
                ],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
            )  # fmt: skip

    def stop(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
        for process in self.processes.values():
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            process.wait()


def _free_ports(count: int) -> list[int]:
    """`count` free ports, all different (free_port, called twice, can hand out the same port twice)."""
    ports: set[int] = set()
    while len(ports) < count:
        ports.add(free_port())
    return sorted(ports)


def _answers(node: redis.Redis) -> bool:
    try:
        return bool(node.ping())
    except redis.RedisError:
        return False


def _state(node: redis.Redis) -> str:
    info: dict[str, Any] = node.cluster("INFO")  # type: ignore[assignment]
    return str(info["cluster_state"])


def _primary_of(node: redis.Redis) -> int | None:
    """The port of the node's primary (None: it is a primary itself)."""
    info: dict[str, Any] = node.info("replication")  # type: ignore[assignment]
    return int(info["master_port"]) if info["role"] == "slave" else None


def _keys_in(node: redis.Redis, slot: int, count: int) -> list[str]:
    keys: list[str] = node.cluster("GETKEYSINSLOT", slot, count)  # type: ignore[assignment]
    return keys


def _slot_map(node: redis.Redis) -> SlotMap:
    # CLUSTER SLOTS: [first, last, [ip, port, id, …], …its replicas] for each range a primary serves
    ranges: list[list[Any]] = node.cluster("SLOTS")  # type: ignore[assignment]
    return tuple(sorted((int(first), int(last), int(primary[1])) for first, last, primary, *_ in ranges))


def _owner_in(slot_map: SlotMap, slot: int) -> int | None:
    return next((port for first, last, port in slot_map if first <= slot <= last), None)


def _redis_cli(*args: str, must_succeed: bool = True) -> str:
    binary = shutil.which("redis-cli")
    assert binary is not None
    done = subprocess.run(
        [binary, *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False
    )
    # it colours its report whether or not it writes to a terminal
    output = ANSI_ESCAPE.sub("", done.stdout + done.stderr)
    if must_succeed and done.returncode != 0:
        raise RuntimeError(f"redis-cli {' '.join(args)} exited with {done.returncode}:\n{output}")
    return output


@contextlib.contextmanager
def redis_cluster(workdir: Path, size: int = 3, replicas: int = 0) -> Iterator[Cluster]:
    cluster = Cluster(workdir, size, replicas)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@contextlib.contextmanager
def stack_on_cluster(
    workdir: Path, *, config: dict[str, dict[str, Any]] | None = None, replicas: int = 0, worker: bool = True
) -> Iterator[tuple[Stack, Cluster]]:
    """A web process with its worker inside (`make run`), and a worker process unless not `worker`, on a
    Cluster of three primaries (REDIS_URL=redis+cluster://…, the records) and the stack's own Redis
    (REDIS_QUEUE_URL, the queue, the running set and the channels)."""
    stack = Stack(workdir / "stack", config=config, topology=TOPOLOGIES["tcp-embedded"])
    try:
        with redis_cluster(workdir / "nodes", replicas=replicas) as cluster:
            stack.start_redis()
            env = {"REDIS_URL": cluster.url, "REDIS_QUEUE_URL": stack.redis_url}
            stack.start_server(**env)
            if worker:
                stack.start_worker(**env)
            stack.wait_ready()
            yield stack, cluster
    finally:
        stack.stop()
