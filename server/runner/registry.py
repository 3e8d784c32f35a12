"""The runs of this process, and the pub/sub listener that stops them when they are cancelled elsewhere."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

from redis.asyncio import Redis

from ..store import keys
from .handle import CANCELLED, RunHandle

log = logging.getLogger(__name__)
T = TypeVar("T")


class RunRegistry:
    def __init__(self) -> None:
        self.runs: dict[str, RunHandle] = {}
        self.listening = asyncio.Event()

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

    async def listen(self, redis: Redis) -> None:
        """Follow the cancel channel for ever (reconnecting); each message names a run to stop."""
        while True:
            try:
                async with redis.pubsub(ignore_subscribe_messages=True) as pubsub:
                    await pubsub.subscribe(keys.CANCEL_CHANNEL)
                    self.listening.set()
                    async for message in pubsub.listen():
                        data = message.get("data")
                        if isinstance(data, bytes):
                            self.stop(data.decode())
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.listening.clear()
                log.warning("cancel listener lost its connection (%s); reconnecting", exc)
                await asyncio.sleep(0.5)
