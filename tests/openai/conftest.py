"""The OpenAI dialects' fixtures: the official openai SDK pointed at the shared server (tests/conftest.py:
the app in this process), each test its own tenant (`api_key`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from openai import AsyncOpenAI, OpenAI


def openai_base(base_url: str) -> str:
    """The base URL the README gives the openai SDK."""
    return f"{base_url}/v1"


@pytest.fixture
def oai(base_url: str, api_key: str) -> Iterator[OpenAI]:
    """The sync SDK with its retries off: a retried failure must not look like a success."""
    with OpenAI(base_url=openai_base(base_url), api_key=api_key, max_retries=0) as client:
        yield client


@pytest.fixture
async def aoai(base_url: str, api_key: str) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(base_url=openai_base(base_url), api_key=api_key, max_retries=0) as client:
        yield client
