"""Real parts for the tests: a private redis-server, web servers and worker processes on 127.0.0.1."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import signal
import ssl
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import certifi
import httpx
import pytest
import redis.asyncio as aioredis
from google import genai
from google.genai import types
from redis import Redis as SyncRedis

from server.launch.redis_process import RedisProcess, free_port

ROOT = Path(__file__).resolve().parent.parent

#: settings that make the tests quick: short leases, fast polling
TEST_CONFIG: dict[str, dict[str, Any]] = {
    "runner": {
        "lease_seconds": 2.0,
        "heartbeat_seconds": 0.5,
        "reaper_interval_seconds": 0.25,
        "max_attempts": 2,
        "pickup_seconds": 2.0,
        "cancel_ack_timeout_seconds": 2.0,
        "keepalive_seconds": 2.0,
    },
    # the worker's wait for a wake-up as shipped (2 s): a queued job must wake it, not a quick poll
    "worker": {"shutdown_grace_seconds": 3.0},
    "upstream_retry": {"attempts": 3, "backoff_initial_seconds": 0.05, "backoff_max_seconds": 0.2},
    "echo": {"slow_word_delay_ms": 50},
    # six-field schedules (seconds first), so that a trigger's test waits seconds for its times, not minutes
    "triggers": {"min_interval_seconds": 1},
}


def toml_of(sections: dict[str, dict[str, Any]]) -> str:
    lines: list[str] = []
    for name, values in sections.items():
        lines.append(f"[{name}]")
        for key, value in values.items():
            lines.append(f"{key} = {_toml_value(value)}")
        lines.append("")
    return "\n".join(lines)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(each) for each in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f'"{k}" = {_toml_value(v)}' for k, v in value.items()) + " }"
    raise TypeError(value)


def merged(
    base: dict[str, dict[str, Any]], extra: dict[str, dict[str, Any]] | None
) -> dict[str, dict[str, Any]]:
    result = {name: dict(values) for name, values in base.items()}
    for name, values in (extra or {}).items():
        result.setdefault(name, {}).update(values)
    return result


class Process:
    def __init__(
        self, args: list[str], env: dict[str, str], log_path: Path, stop_seconds: float = 15.0
    ) -> None:
        self.args = args
        self.env = env
        self.log_path = log_path
        #: how long a SIGTERM may take before the process is killed
        self.stop_seconds = stop_seconds
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        # the child writes to its own copy of the descriptor
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                self.args,
                env=self.env,
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, sig)

    def wait(self, timeout: float) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout=timeout)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        with _suppress():
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=self.stop_seconds)
        except subprocess.TimeoutExpired:
            with _suppress():
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            with self.log_path.open("a") as log:
                log.write(f"[tests] no exit within {self.stop_seconds:g} s of SIGTERM: killed\n")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return True


def start_own_redis(redis: RedisProcess, *, may_move: bool = True, attempts: int = 5) -> RedisProcess:
    """Start a TCP `redis` and make sure the Redis answering on its port is that process.

    RedisProcess.start takes any Redis that answers on its port for its own, and a port free_port() gave
    out may be taken by another program (another test run's Redis, say) before redis-server binds it: its
    redis-server then fails to start while the probe gets that program's PONG, and the tests would share a
    stranger's Redis (and its workers). A taken port is replaced by a new one, unless `may_move` is false
    (a restart, whose clients know the port)."""
    for _ in range(attempts):
        redis.start()
        assert redis.process is not None
        if _process_id(redis.url) == redis.process.pid:
            return redis
        redis.stop()
        if not may_move:
            break
        redis.port = free_port()
    raise RuntimeError(f"another program answers on {redis.url}: this test's Redis could not start there")


def _process_id(url: str) -> int | None:
    with SyncRedis.from_url(url, socket_timeout=5) as client:
        info: dict[str, Any] = client.info("server")
    pid = info.get("process_id")
    return int(pid) if pid is not None else None


class Topology(NamedTuple):
    """How the parts of a stack find each other: the ways the README starts the service."""

    #: the Redis: "tcp" (127.0.0.1:port) or "unix" (a socket)
    transport: str
    #: a worker inside each web process, or separate `python -m workers` processes
    embedded_worker: bool
    #: `python -m server` with no REDIS_URL starts the Redis itself, as `make run` does
    launched: bool = False


TOPOLOGIES: dict[str, Topology] = {
    # REDIS_URL=redis://… EMBEDDED_WORKER=0 make run, plus REDIS_URL=redis://… make worker
    "tcp-workers": Topology("tcp", embedded_worker=False),
    # make run: a private Redis on its unix socket, the worker in the web process
    "make-run": Topology("unix", embedded_worker=True, launched=True),
    # REDIS_URL=redis://… make run: your own Redis, the worker still in the web process
    "tcp-embedded": Topology("tcp", embedded_worker=True),
    # EMBEDDED_WORKER=0 make run, plus make worker (which finds make run's Redis by itself)
    "make-run-workers": Topology("unix", embedded_worker=False, launched=True),
}


class Stack:
    """A Redis, web processes and worker processes sharing it, with one configuration."""

    def __init__(
        self,
        workdir: Path,
        config: dict[str, dict[str, Any]] | None = None,
        models: str = "",
        topology: Topology = TOPOLOGIES["tcp-workers"],
    ) -> None:
        self.workdir = workdir
        self.topology = topology
        workdir.mkdir(parents=True, exist_ok=True)
        #: the data directory of a launched server (IX_DATA_DIR): its Redis, socket and lock
        self.data_dir = workdir / "var"
        if topology.launched:
            # started by the server; this object only says where its socket is
            self.redis = RedisProcess(self.data_dir / "redis")
        else:
            port = free_port() if topology.transport == "tcp" else None
            self.redis = RedisProcess(workdir / "redis", port=port, appendonly=True)
        self.config_path = workdir / "server.toml"
        self.config = merged(TEST_CONFIG, config)
        self.config_path.write_text(toml_of(self.config))
        self.models_path = workdir / "models.toml"
        self.models_path.write_text(models)
        self.servers: list[tuple[Process, str]] = []
        self.workers: list[Process] = []
        self._redis_started = False

    @property
    def redis_url(self) -> str:
        return self.redis.url

    @property
    def url(self) -> str:
        """The first web process's base URL."""
        return self.servers[0][1]

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("GEMINI_", "GOOGLE_"))
            and k not in ("REDIS_URL", "REDIS_QUEUE_URL", "EMBEDDED_WORKER")
        }
        env.update(
            IX_CONFIG=str(self.config_path), IX_MODELS=str(self.models_path), IX_DATA_DIR=str(self.data_dir)
        )
        if not self.topology.launched:
            env["REDIS_URL"] = self.redis_url
        env.update(extra)
        return env

    def start_redis(self) -> None:
        if not self.topology.launched:
            # the first start may move to another port; a restart keeps the one its clients know
            start_own_redis(self.redis, may_move=not self._redis_started)
            self._redis_started = True

    def start_server(self, **env: str) -> str:
        proc, url = self.spawn_server(**env)
        _wait_ready(url, proc, worker_needed=False)
        return url

    def spawn_server(self, **env: str) -> tuple[Process, str]:
        """A web process started, not waited for (see start_server)."""
        assert not (self.topology.launched and self.servers), "one launched server per data directory"
        port = free_port()
        index = len(self.servers)
        embedded = env.pop("EMBEDDED_WORKER", "1" if self.topology.embedded_worker else "0")
        proc = Process(
            [sys.executable, "-m", "server"],
            self.env(PORT=str(port), EMBEDDED_WORKER=embedded, **env),
            self.workdir / f"web-{index}.log",
        )
        proc.start()
        url = f"http://127.0.0.1:{port}"
        # kept before it is ready, so that one that never gets ready is stopped with the stack
        self.servers.append((proc, url))
        return proc, url

    def start_worker(self, **env: str) -> Process:
        proc = self.spawn_worker(**env)
        _wait_worker(proc)
        return proc

    def spawn_worker(self, **env: str) -> Process:
        """A worker process started, not waited for (see start_worker)."""
        index = len(self.workers)
        # a worker stops once its running jobs had their grace (and settled or went back to the queue)
        stop_seconds = float(self.config["worker"]["shutdown_grace_seconds"]) + 5.0
        proc = Process(
            [sys.executable, "-m", "workers"],
            self.env(**env),
            self.workdir / f"worker-{index}.log",
            stop_seconds,
        )
        proc.start()
        self.workers.append(proc)
        return proc

    def wait_ready(self) -> None:
        """Every web process says it is ready: Redis answers and a worker consumes the queue."""
        for proc, url in self.servers:
            _wait_ready(url, proc, worker_needed=True)

    def stop_workers(self) -> None:
        for proc in self.workers:
            proc.stop()
        self.workers.clear()

    def stop(self) -> None:
        self.stop_workers()
        for proc, _url in self.servers:
            proc.stop()
        self.redis.stop()


class StackSpec(NamedTuple):
    """What running_stacks starts: a stack's configuration and processes."""

    workdir: Path
    config: dict[str, dict[str, Any]] | None = None
    models: str = ""
    servers: int = 1
    workers: int = 0
    env: dict[str, str] | None = None
    topology: Topology = TOPOLOGIES["tcp-workers"]


@contextlib.contextmanager
def running_stack(
    workdir: Path,
    *,
    config: dict[str, dict[str, Any]] | None = None,
    models: str = "",
    servers: int = 1,
    workers: int = 0,
    env: dict[str, str] | None = None,
    topology: Topology = TOPOLOGIES["tcp-workers"],
) -> Iterator[Stack]:
    """A started stack (Redis, `servers` web and `workers` worker processes), stopped afterwards."""
    with running_stacks([StackSpec(workdir, config, models, servers, workers, env, topology)]) as [stack]:
        yield stack


@contextlib.contextmanager
def running_stacks(specs: list[StackSpec]) -> Iterator[list[Stack]]:
    """Several stacks started side by side (each process spends a second or so importing), stopped
    afterwards. A launched server starts the Redis its workers find through its lock: they wait for it."""
    stacks = [Stack(s.workdir, config=s.config, models=s.models, topology=s.topology) for s in specs]
    try:
        for stack in stacks:
            stack.start_redis()
        spawned = [
            [stack.spawn_server(**(spec.env or {})) for _ in range(spec.servers)]
            for stack, spec in zip(stacks, specs, strict=True)
        ]
        for stack, servers in zip(stacks, spawned, strict=True):
            if stack.topology.launched:
                for proc, url in servers:
                    _wait_ready(url, proc, worker_needed=False)
        workers = [
            [stack.spawn_worker(**(spec.env or {})) for _ in range(spec.workers)]
            for stack, spec in zip(stacks, specs, strict=True)
        ]
        for proc, url in [server for servers in spawned for server in servers]:
            _wait_ready(url, proc, worker_needed=False)
        for worker in [worker for started in workers for worker in started]:
            _wait_worker(worker)
        for stack, spec in zip(stacks, specs, strict=True):
            if spec.workers or spec.topology.embedded_worker:
                stack.wait_ready()
        yield stacks
    finally:
        for stack in stacks:
            stack.stop()


@contextlib.contextmanager
def stacks_by_topology(
    tmp: pytest.TempPathFactory,
    label: str,
    names: list[str],
    *,
    config: dict[str, dict[str, Any]] | None = None,
    models: str = "",
) -> Iterator[dict[str, Stack]]:
    """A stack per named topology (TOPOLOGIES), started side by side with one configuration: a worker
    process of their own for those without a worker inside the web process."""
    specs = [
        StackSpec(
            Path(tmp.mktemp(f"{label}-{name}")),
            config=config,
            models=models,
            workers=0 if TOPOLOGIES[name].embedded_worker else 1,
            topology=TOPOLOGIES[name],
        )
        for name in names
    ]
    with running_stacks(specs) as started:
        yield dict(zip(names, started, strict=True))


def _wait_worker(proc: Process, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while "worker ready" not in proc.log():
        if proc.proc is not None and proc.proc.poll() is not None:
            raise RuntimeError("worker exited at start:\n" + proc.log())
        if time.monotonic() > deadline:
            raise RuntimeError("worker did not start:\n" + proc.log())
        time.sleep(0.05)


def _wait_ready(url: str, proc: Process, *, worker_needed: bool, timeout: float = 30) -> None:
    """Until /readyz answers 200 (or, without `worker_needed`, 503 for no worker alone)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.proc is not None and proc.proc.poll() is not None:
            raise RuntimeError("server exited at start:\n" + proc.log())
        try:
            response = httpx.get(f"{url}/readyz", timeout=1)
            if response.status_code == 200:
                return
            if not worker_needed and "no worker" in response.json().get("reason", ""):
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise RuntimeError("server did not become ready:\n" + proc.log())


def new_key() -> str:
    """A fresh API key: each test is its own tenant."""
    return f"test-{uuid.uuid4().hex}"


def tenant_of(api_key: str) -> str:
    return hashlib.sha256(api_key.encode()).hexdigest()[:32]


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The TLS context the SDK would build for itself (certifi's roots), built once for every client."""
    return ssl.create_default_context(cafile=certifi.where())


def sdk(base_url: str, api_key: str, version: str | None = "v1beta") -> genai.Client:
    """The official SDK with its retries off: a retried 5xx must not look like a success.

    Its TLS context is shared: the SDK otherwise builds three per client (httpx, aiohttp, websockets), each
    loading the CA bundle, about 0.2 s a client, which the tests' plain-HTTP servers never use."""
    options = types.HttpOptions(
        base_url=base_url,
        api_version=version,
        retry_options=types.HttpRetryOptions(attempts=1),
        client_args={"verify": tls_context()},
        async_client_args={"verify": tls_context(), "ssl": tls_context()},
    )
    client = genai.Client(api_key=api_key, http_options=options)
    OPENED.append(client)
    return client


#: the SDK clients made by `sdk` and not closed yet (the tests' conftest closes them after each test)
OPENED: list[genai.Client] = []


async def close_clients() -> None:
    """Close every SDK client `sdk` made: their connections would otherwise be closed when collected, each
    with a ResourceWarning."""
    while OPENED:
        client = OPENED.pop()
        client.close()
        await client.aio.aclose()


async def tenant_keys(redis: aioredis.Redis, tenant: str, *, usage: bool = False) -> list[bytes]:
    """Every Redis key of a tenant but (unless `usage`) its usage totals, which no delete takes: they
    are what it used (keys.usage)."""
    found = [key async for key in redis.scan_iter(match=f"ix:{{{tenant}}}:*")]
    return found if usage else [key for key in found if not is_usage_key(key)]


def is_usage_key(key: bytes | str) -> bool:
    """A tenant's usage totals of a day (keys.usage) or its tokens by minute (keys.minute_tokens), which
    outlive what it stored."""
    name = key.encode() if isinstance(key, str) else key
    return name.find(b"}:usage:") >= 0 or name.endswith(b"}:tpm")
