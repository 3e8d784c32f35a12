from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis
from google import genai

from .support import Stack, new_key, running_stack, sdk, tenant_of


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The shared stack: a private Redis, one web process and one worker process."""
    with running_stack(Path(tmp_path_factory.mktemp("stack")), workers=1) as stack:
        yield stack


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
