"""The runs of this process, by name, so a cancel broadcast from any process can stop them."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from .handle import CANCELLED, RunHandle

T = TypeVar("T")


class RunRegistry:
    def __init__(self) -> None:
        self.runs: dict[str, RunHandle] = {}

    def start(self, handle: RunHandle, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        task = asyncio.create_task(coro)
        handle.task = task
        if handle.member is not None:
            member = handle.member
            self.runs[member] = handle
            task.add_done_callback(lambda _t: self._forget(member, handle))
        return task

    def _forget(self, member: str, handle: RunHandle) -> None:
        if self.runs.get(member) is handle:
            del self.runs[member]

    def stop(self, member: str, reason: str = CANCELLED) -> bool:
        handle = self.runs.get(member)
        return handle.stop(reason) if handle is not None else False

    async def stop_all(self, reason: str, grace: float) -> None:
        """Stop every run of this process and give them `grace` seconds to save what they made."""
        handles = list(self.runs.values())
        for handle in handles:
            handle.stop(reason)
        tasks = [h.task for h in handles if h.task is not None and not h.task.done()]
        if tasks:
            await asyncio.wait(tasks, timeout=grace)
