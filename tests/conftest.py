"""The servers the tests share.

`server` is what the fixtures `base_url`, `redis`, `client`, `beta` and `http` talk to: by default the real
app in this process (tests/inproc.py: granian's embedded server on 127.0.0.1, its own redis-server, the
worker embedded), shared by the session. A module that says `EVERY_TOPOLOGY = True` gets, instead, each of
the subprocess stacks the README starts (tests/support.py: TOPOLOGIES) in turn.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Protocol

import httpx
import pytest
import redis.asyncio as aioredis
from google import genai

from server import settings as settings_module
from server.launch.redis_process import RedisProcess, free_port
from server.runner.handle import DISCONNECTED
from server.runtime import Runtime
from server.store.store import Store
from server.worker_host import WorkerHost

from .fakes.proxy import without_proxies
from .fakes.tls import CertificateAuthority
from .inproc import ThreadedApp, threaded, write_settings
from .runner.harness import ScriptedBackend
from .support import (
    TOPOLOGIES,
    Stack,
    StackSpec,
    close_clients,
    new_key,
    running_stacks,
    sdk,
    start_own_redis,
    tenant_of,
)


class Served(Protocol):
    """A running server of the tests: a subprocess Stack or an in-process app."""

    @property
    def url(self) -> str: ...

    @property
    def redis_url(self) -> str: ...


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """In a module that says `EVERY_TOPOLOGY = True`, each test on the shared server runs once on each of
    the ways the README starts the service."""
    if getattr(metafunc.module, "EVERY_TOPOLOGY", False) and "server" in metafunc.fixturenames:
        metafunc.parametrize("server", list(TOPOLOGIES), indirect=True, scope="session")


class Stacks:
    """The shared stacks, one per topology, all started side by side on first use and kept for the
    session."""

    def __init__(self, tmp: pytest.TempPathFactory) -> None:
        self.tmp = tmp
        self.started: dict[str, Stack] = {}
        self.exits = contextlib.ExitStack()

    def get(self, name: str) -> Stack:
        if not self.started:
            specs = [
                StackSpec(
                    Path(self.tmp.mktemp(f"stack-{each}")),
                    workers=0 if topology.embedded_worker else 1,
                    topology=topology,
                )
                for each, topology in TOPOLOGIES.items()
            ]
            stacks = self.exits.enter_context(running_stacks(specs))
            self.started = dict(zip(TOPOLOGIES, stacks, strict=True))
        return self.started[name]


@pytest.fixture(scope="session")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stacks]:
    pool = Stacks(tmp_path_factory)
    with pool.exits:
        yield pool


@pytest.fixture(scope="session")
def in_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedApp]:
    """The app in this process, with the test configuration (tests/support.py: TEST_CONFIG)."""
    with threaded(Path(tmp_path_factory.mktemp("in-process"))) as app:
        yield app


@pytest.fixture(scope="session")
def server(request: pytest.FixtureRequest) -> Served:
    """The shared server: the in-process app, or (in a module with EVERY_TOPOLOGY) each stack in turn."""
    name: str | None = getattr(request, "param", None)
    if name is None:
        app: ThreadedApp = request.getfixturevalue("in_process")
        return app
    stacks: Stacks = request.getfixturevalue("stacks")
    return stacks.get(name)


@pytest.fixture(scope="session")
def stack(server: Served) -> Stack:
    """The shared server as a subprocess stack (modules with EVERY_TOPOLOGY)."""
    assert isinstance(server, Stack), (
        "`stack` is a subprocess stack: only modules with EVERY_TOPOLOGY have one"
    )
    return server


@pytest.fixture(scope="session")
def base_url(server: Served) -> str:
    return server.url


@pytest.fixture(autouse=True)
async def sdk_clients() -> AsyncIterator[None]:
    """Every SDK client a test made (tests/support.py: sdk) is closed after it."""
    try:
        yield
    finally:
        await close_clients()


@pytest.fixture
def api_key() -> str:
    return new_key()


@pytest.fixture
def tenant(api_key: str) -> str:
    return tenant_of(api_key)


@pytest.fixture(params=["v1", "v1beta"])
def client(request: pytest.FixtureRequest, base_url: str, api_key: str) -> genai.Client:
    """The official SDK, on the default `/v1` path and on `/v1beta`."""
    return sdk(base_url, api_key, None if request.param == "v1" else "v1beta")


@pytest.fixture
def beta(base_url: str, api_key: str) -> genai.Client:
    return sdk(base_url, api_key, "v1beta")


@pytest.fixture
def http(base_url: str, api_key: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, headers={"x-goog-api-key": api_key}, timeout=30) as client:
        yield client


@pytest.fixture
async def redis(server: Served) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(server.redis_url)
    try:
        yield client
    finally:
        await client.aclose()


# ---------------------------------------------------------------------------------------------------------
# Below the API: the store, the runner and the event log in this process, on a Redis of their own

#: the runner's clock for the in-process tests of the runtime: a lost run is seen within a second or so
RUNTIME_CONFIG: dict[str, dict[str, float | int]] = {
    "runner": {
        "lease_seconds": 1.0,
        "heartbeat_seconds": 0.2,
        "reaper_interval_seconds": 0.1,
        "pickup_seconds": 1.0,
        "flush_interval_ms": 5,
    },
}


@pytest.fixture(scope="session")
def private_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    """A redis-server of the in-process tests below the API (started once, flushed by each test)."""
    process = RedisProcess(Path(tmp_path_factory.mktemp("private-redis")), port=free_port(), appendonly=False)
    start_own_redis(process)
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
async def store(private_redis: RedisProcess) -> AsyncIterator[Store]:
    """The store in-process, against the session's private redis-server, flushed per test."""
    settings = settings_module.load({"REDIS_URL": private_redis.url})
    opened = await Store.open(settings)
    await opened.redis.flushdb()  # this session's own Redis: used by nothing else now
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
def scripted() -> ScriptedBackend:
    return ScriptedBackend()


@pytest.fixture
async def runtime(
    private_redis: RedisProcess, tmp_path: Path, scripted: ScriptedBackend
) -> AsyncIterator[Runtime]:
    """A process's runtime (store, use cases, reaper, log writer) on this loop, with the model `scripted`
    answering what the test feeds it."""
    flush = aioredis.Redis.from_url(private_redis.url)
    try:
        await flush.flushdb()  # this session's own Redis: used by nothing else now
    finally:
        await flush.aclose()
    opened = await Runtime.open(write_settings(tmp_path, private_redis.url, RUNTIME_CONFIG))
    opened.router.builtin[scripted.name] = scripted
    try:
        yield opened
    finally:
        await opened.registry.stop_all(DISCONNECTED, grace=2.0)
        await opened.close()


@pytest.fixture
async def worker(runtime: Runtime) -> AsyncIterator[WorkerHost]:
    """A worker host in the test's process, running the runtime's background jobs."""
    host = WorkerHost(runtime)
    await host.start()
    try:
        yield host
    finally:
        await host.stop(grace=0.5)


@pytest.fixture(scope="session")
def authority(tmp_path_factory: pytest.TempPathFactory) -> CertificateAuthority:
    """A CA of the tests' own (the TLS upstreams, receivers and MCP servers of the proxy tests)."""
    return CertificateAuthority(tmp_path_factory.mktemp("ca"))


@pytest.fixture
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Only the proxies a test sets: none of the machine's."""
    return without_proxies(monkeypatch)
