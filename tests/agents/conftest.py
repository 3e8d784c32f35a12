"""One server process for the Agents tests (a worker in it, for background runs), with a configured agent
name `house-agent` routed to echo."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from google import genai

from ..support import TOPOLOGIES, Stack, new_key, running_stack, sdk

MODELS = '[[models]]\nmatch = "house-agent"\nbackend = "echo"\n'


@pytest.fixture(scope="package")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("agents")
    with running_stack(workdir, models=MODELS, topology=TOPOLOGIES["tcp-embedded"]) as started:
        yield started


@pytest.fixture
def api_key() -> str:
    return new_key()


@pytest.fixture
def client(stack: Stack, api_key: str) -> genai.Client:
    return sdk(stack.url, api_key)


@pytest.fixture
def http(stack: Stack, api_key: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=stack.url, headers={"x-goog-api-key": api_key}, timeout=30) as opened:
        yield opened
