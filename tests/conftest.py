from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis
from google import genai

from .support import TOPOLOGIES, Stack, new_key, running_stack, sdk, tenant_of


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """In a module that says `EVERY_TOPOLOGY = True`, each test on the shared stack runs once on each of
    the ways the README starts the service."""
    if getattr(metafunc.module, "EVERY_TOPOLOGY", False) and "stack" in metafunc.fixturenames:
        metafunc.parametrize("stack", list(TOPOLOGIES), indirect=True, scope="session")


class Stacks:
    """The shared stacks, one per topology, each started on first use and kept for the session."""

    def __init__(self, tmp: pytest.TempPathFactory) -> None:
        self.tmp = tmp
        self.started: dict[str, Stack] = {}
        self.exits = contextlib.ExitStack()

    def get(self, name: str) -> Stack:
        if name not in self.started:
            topology = TOPOLOGIES[name]
            workers = 0 if topology.embedded_worker else 1
            workdir = Path(self.tmp.mktemp(f"stack-{name}"))
            self.started[name] = self.exits.enter_context(
                running_stack(workdir, workers=workers, topology=topology)
            )
        return self.started[name]


@pytest.fixture(scope="session")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stacks]:
    pool = Stacks(tmp_path_factory)
    with pool.exits:
        yield pool


@pytest.fixture(scope="session")
def stack(request: pytest.FixtureRequest, stacks: Stacks) -> Stack:
    """A shared stack: by default a private Redis on TCP, one web process and one worker process; in a
    module with EVERY_TOPOLOGY, each of the ways the README starts the service in turn."""
    return stacks.get(getattr(request, "param", "tcp-workers"))


@pytest.fixture(scope="session")
def base_url(stack: Stack) -> str:
    return stack.servers[0][1]


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
async def redis(stack: Stack) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(stack.redis_url)
    try:
        yield client
    finally:
        await client.aclose()
