"""An asyncio loop in a daemon thread, serving fake upstreams while the tests block in the SDK."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

from .http import FakeServer

T = TypeVar("T")
F = TypeVar("F", bound=FakeServer)


class FakeLoop:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="fake-upstreams", daemon=True)
        self.thread.start()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 10) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        self.loop.close()


@contextlib.contextmanager
def fake_in_thread(fake: F) -> Iterator[F]:
    """`fake` started on a loop of its own (for a module of sync tests), stopped with its loop at the end."""
    loop = FakeLoop()
    loop.call(fake.start())
    try:
        yield fake
    finally:
        loop.call(fake.stop())
        loop.close()
