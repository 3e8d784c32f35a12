"""Redis Sentinel on loopback for the tests: a primary (the stack's own Redis), a replica of it and three
Sentinels watching it, each a real redis-server process with a temporary directory."""

from __future__ import annotations

import contextlib
import functools
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import redis

from server.launch.redis_process import free_port

from ..support import TOPOLOGIES, Stack
from ..waiting import until

SERVICE = "ixprimary"
#: how soon the Sentinels call a silent primary down, and how long a failover may take
DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 5000


class Group:
    def __init__(self, workdir: Path, primary_port: int) -> None:
        self.workdir = workdir
        self.primary_port = primary_port
        self.replica_port = free_port()
        self.sentinel_ports = [free_port() for _ in range(3)]
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{port}" for port in self.sentinel_ports)
        return f"redis+sentinel://{hosts}/{SERVICE}"

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._start_replica(self.primary_port)
        for index, port in enumerate(self.sentinel_ports):
            config = self.workdir / f"sentinel-{index}.conf"
            config.write_text(
                f"port {port}\nbind 127.0.0.1\ndir {self.workdir}\n"
                f"sentinel monitor {SERVICE} 127.0.0.1 {self.primary_port} 2\n"
                f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}\n"
                f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}\n"
                f"sentinel parallel-syncs {SERVICE} 1\n"
            )
            self._spawn(f"sentinel-{index}", [str(config), "--sentinel"])
        for port in self.sentinel_ports:
            sentinel = redis.Redis(host="127.0.0.1", port=port)
            until(functools.partial(_knows_everyone, sentinel), timeout=30, interval=0.1)

    def primary(self) -> int:
        """The port the Sentinels name as the primary now."""
        sentinel = redis.Redis(host="127.0.0.1", port=self.sentinel_ports[0])
        address = sentinel.sentinel_get_master_addr_by_name(SERVICE)  # type: ignore[no-untyped-call]
        return int(address[1])

    def _start_replica(self, primary_port: int) -> None:
        self._spawn("replica", [
            "--port", str(self.replica_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            # the copy a replica takes of the primary is written to its directory, not the caller's
            "--dir", str(self.workdir),
            "--replicaof", "127.0.0.1", str(primary_port),
        ])  # fmt: skip
        replica = redis.Redis(host="127.0.0.1", port=self.replica_port)
        until(lambda: in_sync(replica), timeout=15)

    def restart_replica(self) -> None:
        """Start the replica this group started again (after `kill_replica`), a replica of the primary now,
        until the Sentinels count it up again."""
        self._start_replica(self.primary())
        until(lambda: self.replicas() >= 1, timeout=30, interval=0.2)

    def kill_replica(self) -> None:
        """SIGKILL the replica this group started (after a failover, the primary)."""
        process = self.processes["replica"]
        process.kill()
        process.wait()

    def replicas(self) -> int:
        """How many replicas the Sentinels know of the primary, and think are up."""
        sentinel = redis.Redis(host="127.0.0.1", port=self.sentinel_ports[0])
        found: list[dict[str, Any]] = sentinel.sentinel_slaves(SERVICE)  # type: ignore[no-untyped-call]
        return sum(
            1 for replica in found if not ({"s_down", "o_down", "disconnected"} & set(replica["flags"]))
        )

    def replicating(self, port: int | None) -> bool:
        """Whether the Redis on `port` is a replica with its copy of the primary made and in sync."""
        return in_sync(redis.Redis(host="127.0.0.1", port=port or 0))

    def _spawn(self, name: str, args: list[str]) -> None:
        binary = shutil.which("redis-server")
        assert binary is not None
        log = self.workdir / f"{name}.log"
        with log.open("ab") as output:  # the child has its own copy of the descriptor
            self.processes[name] = subprocess.Popen(
                [binary, *args],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
            )

    def stop(self) -> None:
        for process in self.processes.values():
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            process.wait()


def in_sync(replica: redis.Redis) -> bool:
    """Whether the Redis is a replica with its copy of its primary made and its link to it up."""
    try:
        info: dict[str, Any] = replica.info("replication")  # type: ignore[assignment]
        return bool(info.get("master_link_status") == "up")
    except redis.RedisError:
        return False


def _knows_everyone(sentinel: redis.Redis) -> bool:
    try:
        masters: dict[str, Any] = sentinel.sentinel_masters()  # type: ignore[no-untyped-call]
    except redis.RedisError:
        return False
    state: dict[str, Any] = masters.get(SERVICE) or {}
    return bool(state) and state["num-slaves"] >= 1 and state["num-other-sentinels"] >= 2


@contextlib.contextmanager
def sentinel_group(workdir: Path, primary_port: int) -> Iterator[Group]:
    group = Group(workdir, primary_port)
    try:
        group.start()
        yield group
    finally:
        group.stop()


@contextlib.contextmanager
def stack_on_sentinels(workdir: Path, config: dict[str, dict[str, Any]]) -> Iterator[tuple[Stack, Group]]:
    """A web process and a worker process following a Sentinel group (REDIS_URL=redis+sentinel://…) whose
    first primary is the stack's own Redis."""
    stack = Stack(workdir, config=config, topology=TOPOLOGIES["tcp-workers"])
    try:
        stack.start_redis()
        assert stack.redis.port is not None
        with sentinel_group(workdir / "group", stack.redis.port) as group:
            stack.start_server(REDIS_URL=group.url)
            stack.start_worker(REDIS_URL=group.url)
            stack.wait_ready()
            yield stack, group
    finally:
        stack.stop()
