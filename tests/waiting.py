"""Waiting for a condition, bounded."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def until(check: Callable[[], T | None], timeout: float = 10.0, interval: float = 0.02) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"condition not met within {timeout}s")
        time.sleep(interval)


async def until_async(
    check: Callable[[], Awaitable[T | None]], within: float = 10.0, interval: float = 0.02
) -> T:
    deadline = time.monotonic() + within
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"condition not met within {within}s")
        await asyncio.sleep(interval)
