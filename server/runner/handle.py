"""A running interaction as the process that runs it sees it: its task and why it was stopped."""

from __future__ import annotations

import asyncio
from typing import Any, Final

#: the interaction was cancelled through the API (its status is already `cancelled`)
CANCELLED: Final = "cancelled"
#: the client of a foreground stream went away
DISCONNECTED: Final = "disconnected"
#: another runner took the interaction over (this one's writes are refused)
FENCED: Final = "fenced"
#: the log could not be written for a lease period (Redis is away): the run stops, the reaper settles it
UNAVAILABLE: Final = "unavailable"
#: the worker is shutting down: a run with output settles as failed, one without goes back to the queue
SHUTDOWN: Final = "shutdown"


class RunHandle:
    __slots__ = ("member", "reason", "settling", "task")

    def __init__(self, member: str | None) -> None:
        self.member = member
        self.reason: str | None = None
        #: the run is writing its end: a stop now would lose it (a cancel then wins in Redis instead)
        self.settling = False
        self.task: asyncio.Task[Any] | None = None

    def stop(self, reason: str) -> bool:
        """Cancel the run's task (which closes its upstream connection) and remember why; once."""
        if self.reason is not None or self.settling or self.task is None or self.task.done():
            return False
        self.reason = reason
        self.task.cancel()
        return True
