"""The tenants' turns on the queue: how a worker takes the next tenant's next job, and what a token says.

Each queued job waits in its tenant's list, and the tenants with jobs waiting are in a ring, each once
(scripts/_turns.lua, run by every script that queues a job); a worker takes the ring's first tenant's oldest
job, in one round trip (take_turn.lua), so one tenant's backlog holds another tenant's job back by one turn,
not by the backlog. A queued job also leaves a token, which wakes one idle worker (a blocking pop of
keys.wake); the tokens no worker took are capped, so a worker whose take says more jobs wait takes the next
without one.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from arq.constants import in_progress_key_prefix, job_key_prefix

from . import keys
from .commands import now_ms
from .jobs import FIRE_MARK_MS, KINDS, RUN_MARK_MS, Jobs, Mark, mark_of

#: what a token of this version says (scripts/_turns.lua): the next tenant's next job waits
WAKE_TOKEN: Final = "*"
#: the most jobs one take_turn.lua looks at that cannot be taken (taken already, gone, listed twice)
_PASSED_OVER = 50


class Wake(NamedTuple):
    """Why a worker takes a job now: the token it took (None: it took none, as a slot of its freed or its
    last turn said more wait), and whether a slot of its freed."""

    token: str | None = None
    freed: bool = False

    @property
    def named(self) -> str | None:
        """The job a token of the version before names ("tenant/id/fence"), taken as it was."""
        return self.token if self.token is not None and "/" in self.token else None


def woken_by(token: str) -> Wake | None:
    """What a token a worker took says: take the next turn, or the job it names; None for an older
    version's ("1"), which names none: the worker reads the queue then."""
    return Wake(token) if token == WAKE_TOKEN or "/" in token else None


class Marks(NamedTuple):
    """How long a worker's mark in progress holds a job of each mark (ms): store/jobs.py says why."""

    attempt: int
    run: int = RUN_MARK_MS
    fire: int = FIRE_MARK_MS

    def of(self, job_id: str) -> int:
        return self.by_mark(mark_of(job_id))

    def by_mark(self, mark: Mark) -> int:
        return self.fire if mark == "fire" else self.attempt if mark == "attempt" else self.run

    def by_prefix(self) -> list[object]:
        """(prefix, ms) of each kind but a run's, flat, as take_turn.lua is given them."""
        return [part for kind in KINDS if kind.prefix for part in (kind.prefix, self.by_mark(kind.mark))]


class Turn(NamedTuple):
    """What a take of the next turn found: the job taken and its data (arq's serialized form), None when
    none was; and whether a tenant still has jobs waiting."""

    job: str | None
    data: bytes | None
    more: bool


class Turns:
    """A worker's takes of the next turn on its queue, each job marked for as long as `marks` says."""

    def __init__(self, jobs: Jobs, marks: Marks) -> None:
        self.jobs = jobs
        self.marks = marks

    async def take(self, *, woken: bool) -> Turn:
        """Take the next tenant's next job (take_turn.lua): marked as this worker's and read, in one round
        trip; `woken`: this worker took a token for it. A job queued for later is not taken before its
        time (the worker's timer hears when it is due: Jobs.note_deferred)."""
        queue = self.jobs.queue_name
        names = [queue, keys.wake(queue), keys.ring(queue), keys.deferred(queue)]
        args = [now_ms(), "1" if woken else "", _PASSED_OVER, job_key_prefix, in_progress_key_prefix]
        found: list[bytes | int] = await self.jobs.scripts.take_turn(
            keys=names, args=[*args, self.marks.run, *self.marks.by_prefix()]
        )
        job_b, data, more = found
        job = job_b.decode() if isinstance(job_b, bytes) else str(job_b)
        if isinstance(data, int):
            self.jobs.note_deferred(job, data)
            return Turn(None, None, bool(more))
        return Turn(job or None, data or None, bool(more))
