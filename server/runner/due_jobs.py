"""A worker's timer for jobs queued for later (a webhook's retry): at each one's due time, its turn.

A worker takes a job in its turn, woken by a token (store/turns.py), and the turn a job queued for later
is given at once wakes a worker too early to take it. So each worker also keeps a timer: it sleeps until
the earliest due time it knows of, then gives every due job a turn (store/scripts/due.lua, run by
whichever worker comes first; the rest find nothing to do), which wakes one idle worker to take it, however
busy the queue is. It hears of due times with no Redis command of its own: from the jobs this process
queues for later, from the early turns it takes (take_turn.lua answers the job's due time), from the due
channel, on which wake.lua tells every process of each job queued for later (so that a job's time is known
by more than the worker that took its early turn, which may be killed with it), and from due.lua's
answer, the job due first of those left, so that knowledge passes on from worker to worker. A worker that
stops hands the job it would have woken for to another one (its token); and every `check_seconds` its
timer calls due.lua anyway (one command when nothing is due), for a job whose time no process heard (a
message lost while a listener resubscribed).
"""

from __future__ import annotations

import asyncio

from ..store.commands import now_ms
from ..store.jobs import Jobs
from .loops import first_pause

#: a due job's token is pushed again this long after, until a worker took the job: a worker that died
#: with the token, or a token list trimmed, delays a job by this at most
AGAIN_MS = 5_000


class DueJobs:
    def __init__(self, jobs: Jobs, check_seconds: float) -> None:
        self.jobs = jobs
        self.check_ms = int(check_seconds * 1000)
        #: the job due first that this worker knows of, and its due time (ms); None when it knows none
        self.next_job: str | None = None
        self.next_ms: int | None = None
        self.sooner = asyncio.Event()

    def note(self, job: str, due_ms: int) -> None:
        """`job` is due at `due_ms`: the timer wakes then, if that is sooner than it would."""
        if self.next_ms is None or due_ms < self.next_ms:
            self.next_job, self.next_ms = job, due_ms
            self.sooner.set()

    async def run(self) -> None:
        """For ever (until cancelled; a Redis error ends it, and its supervisor runs it again): the due
        jobs' tokens, then a sleep until the next due time or check."""
        # the first check comes sooner, at a random point, so workers started together check out of step
        check_in = int(first_pause(self.check_ms / 1000) * 1000)
        while True:
            # a note that comes while due.lua runs is kept: it may be sooner than what due.lua answers
            self.next_job = self.next_ms = None
            first = await self.jobs.push_due(AGAIN_MS)
            if first is not None:
                self.note(*first)
            await self._sleep(now_ms() + check_in)
            check_in = self.check_ms

    async def _sleep(self, check_at: int) -> None:
        """Until the earliest due time known or `check_at`, whichever comes first; a sooner note counts."""
        while True:
            self.sooner.clear()
            until = check_at if self.next_ms is None else min(check_at, self.next_ms)
            wait = (until - now_ms()) / 1000
            if wait <= 0:
                return
            try:
                async with asyncio.timeout(wait):
                    await self.sooner.wait()
            except TimeoutError:
                return
