"""The OpenAI dialects' fixtures: the official openai SDK pointed at the shared server (tests/conftest.py:
the app in this process), each test its own tenant (`api_key`); and the Chat Completions modules' server
(chat_support.py), one per module, its fake upstream cleared around each test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from openai import AsyncOpenAI, OpenAI

from .chat_support import ChatServer, chat_server, openai_client


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


@pytest.fixture(scope="module")
def chat_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatServer]:
    with chat_server(Path(tmp_path_factory.mktemp("chat"))) as served:
        yield served


@pytest.fixture
def chat(chat_stack: ChatServer) -> Iterator[ChatServer]:
    """The module's chat server, what its fake upstream was asked and told to answer cleared."""
    chat_stack.reset()
    yield chat_stack
    chat_stack.reset()


@pytest.fixture
def client(chat: ChatServer, api_key: str) -> Iterator[OpenAI]:
    with openai_client(chat.url, api_key) as made:
        yield made
