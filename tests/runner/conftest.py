"""Fixtures of the runner's in-process tests (the `runtime` fixture is tests/conftest.py's)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from server.runtime import Runtime
from server.worker_host import WorkerHost


@pytest.fixture
async def worker(runtime: Runtime) -> AsyncIterator[WorkerHost]:
    """A worker host in the test's process, running the runtime's background jobs."""
    host = WorkerHost(runtime)
    await host.start()
    try:
        yield host
    finally:
        await host.stop(grace=0.5)
