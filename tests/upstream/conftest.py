"""Fixtures of the upstream client's tests: raw servers on 127.0.0.1 (`raw_http.py`), a client, and the
scriptable fake upstream the backends' tests call over real HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from server.upstream.http1 import Client
from tests.fakes.http import FakeServer

from .raw_http import Start, servers
from .raw_http import client as new_client


@pytest.fixture
async def start() -> AsyncIterator[Start]:
    async with servers() as start:
        yield start


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    async with new_client() as client:
        yield client


@pytest.fixture
async def fake() -> AsyncIterator[FakeServer]:
    async with FakeServer() as server:
        yield server
