"""The job queue (arq): everything this server knows of arq's keys and jobs is here.

A background interaction is run by a job named by (tenant, id, fence): a new fence, a new job, so a job
re-delivered after its run moved on is told apart (claim.lua refuses it as stale).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal

import msgspec
from arq.connections import ArqRedis
from arq.constants import expires_extra_ms, in_progress_key_prefix, result_key_prefix, retry_key_prefix
from arq.jobs import serialize_job
from redis.asyncio import Redis

from ..observability import context, spans
from . import keys
from .commands import now_ms, text, typed
from .scripts import Scripts

JOB_NAME: Final = "run_interaction"
#: the job of an interaction's end, which every subscriber hears (worker_jobs.interaction_ended: its
#: webhook deliveries, the trigger execution that made it; its name is from when webhooks were the only
#: one, kept so that a job queued by an earlier version runs), and the job of one delivery attempt
EVENT_JOB: Final = "dispatch_webhook_event"
DELIVERY_JOB: Final = "deliver_webhook"
#: the job that deletes what a filter matches (server/search/deleting.py)
DELETION_JOB: Final = "delete_matching"
#: the job that fires a trigger at one of its scheduled times, and the one due at an execution's timeout
#: (server/triggers/firing.py)
TRIGGER_JOB: Final = "fire_trigger"
TRIGGER_END_JOB: Final = "settle_trigger"

#: how long a worker's mark in progress holds a job of a kind (runner/job_loop.JobLoop.mark_ms): a run
#: holds a lease of its own (claim.lua), so its mark can last a day (and 10 s, as arq made it); the others
#: have only their mark, short, so that one whose worker died is taken again soon, and one that failed
#: stays queued to be tried again: a webhook's or a purge's lasts one delivery attempt
#: (worker_jobs.webhook_mark_ms), a trigger's fire FIRE_MARK_MS, renewed every third of it while it runs
#: (a fire taken twice at once still makes one execution and one interaction: triggers/firing.py), so
#: that a time whose worker was killed mid-fire is fired again within about a second
Mark = Literal["run", "attempt", "fire"]
RUN_MARK_MS: Final = 24 * 3600 * 1000 + 10_000
FIRE_MARK_MS: Final = 500
#: a fire job's token comes again this soon (due.lua) while it is queued, not the others' AGAIN_MS: its
#: token lost with a killed worker, or its mark run out, it waits no longer than this for a worker
FIRE_AGAIN_MS: Final = 250
#: a fire that failed (a Redis outage, a bug) is tried again after this, not as soon as its mark runs out
FIRE_RETRY_MS: Final = 10_000


class JobKind(msgspec.Struct, frozen=True):
    """One kind of job: the name it is queued under (its function's: worker_jobs.FUNCTIONS), how its ids
    start (their schemes are keys.py's), and its mark in progress."""

    name: str
    #: "" for a run's (`tenant/id/fence`): what no other kind's id starts with
    prefix: str
    mark: Mark


#: every kind of job, the queue's one table of them
KINDS: Final = (
    JobKind(JOB_NAME, "", "run"),
    # keys.event_job_id, webhooks/pending.Delivery.job_id, keys.deletion_job_id, keys.trigger_fire_job_id
    JobKind(EVENT_JOB, "whev/", "attempt"),
    JobKind(DELIVERY_JOB, "wh/", "attempt"),
    JobKind(DELETION_JOB, "del/", "attempt"),
    JobKind(TRIGGER_JOB, keys.TRIGGER_JOB_PREFIX, "fire"),
    JobKind(TRIGGER_END_JOB, keys.TRIGGER_JOB_PREFIX, "fire"),
)


#: the id prefixes of the kinds whose ids name their tenant second (a run's names it first)
PREFIXES: Final = tuple(dict.fromkeys(kind.prefix for kind in KINDS if kind.prefix))


def mark_of(job_id: str) -> Mark:
    """The mark of a job, by its id (a run's, unless another kind's prefix starts it)."""
    return next((kind.mark for kind in KINDS if kind.prefix and job_id.startswith(kind.prefix)), "run")


def tenant_of(job_id: str) -> str:
    """The tenant a job is for, whose turn it waits for (scripts/_turns.lua): every kind's id names it,
    a run's first (`tenant/id/fence`), the others' after their prefix (due.lua reads it the same way)."""
    rest = next((job_id[len(prefix) :] for prefix in PREFIXES if job_id.startswith(prefix)), job_id)
    return rest.partition("/")[0]


#: the id prefixes of the kinds whose turns come again FIRE_AGAIN_MS after (due.lua)
_QUICK_PREFIXES: Final = " ".join(sorted({kind.prefix for kind in KINDS if kind.mark == "fire"}))


def job_serializer(job: dict[str, object]) -> bytes:
    # arq pickles by default; a job here is names and numbers only
    return msgspec.msgpack.encode(job)


def job_deserializer(data: bytes) -> dict[str, object]:
    job: dict[str, object] = msgspec.msgpack.decode(data)
    return job


#: wake-up tokens kept for jobs no idle worker took yet (a worker that takes a job hears whether more wait)
_MAX_TOKENS = 1000
#: the most due jobs one call of due.lua gives tokens (more: the worker calls it again at once)
_DUE_AT_ONCE = 100
#: the most queued jobs one read of the queue looks at (ready.lua): past 10 workers' runs in progress
_READ_LOOKS = 1000


class EventJob(msgspec.Struct, frozen=True):
    """What a script that ends an interaction needs to queue the job of its end (scripts/_notify.lua)."""

    keys: list[str]
    job: str
    data: bytes
    now: int
    ttl_ms: int = expires_extra_ms
    max_tokens: int = _MAX_TOKENS


def event_job(queue_name: str, tenant: str, interaction_id: str, *, ends: bool = True) -> EventJob:
    """The job of an interaction's end, built for every end (a script decides whether to queue it, by
    whether anyone subscribes): a few microseconds, no round trip. `ends=False`: the keys only, for
    a script that stores an interaction not ended (its job is `""`: none)."""
    job, now = keys.event_job_id(tenant, interaction_id), now_ms()
    names = [keys.webhooks_enabled(tenant), keys.arq_job(job), queue_name, keys.wake(queue_name)]
    if not ends:
        return EventJob(keys=names, job="", data=b"", now=now)
    # `now` is when it ends, to the ms (the record's `updated` is to the second): webhooks' retries count
    # from it, and their metrics measure from it
    data = serialize_job(EVENT_JOB, (tenant, interaction_id, now), {}, None, now, serializer=job_serializer)
    return EventJob(keys=names, job=job, data=data, now=now)


class Jobs:
    def __init__(
        self, redis: ArqRedis, blocking: Redis, scripts: Scripts, queue_name: str, timeout: float
    ) -> None:
        self.redis = redis
        self.commands = typed(redis)
        self.blocking = typed(blocking)
        self.scripts = scripts
        self.queue_name = queue_name
        self.timeout = timeout
        #: told each job queued for later this process hears of (queued here, or named by a token it took
        #: too early) and its due time: the worker's timer (server/runner/due_jobs.py)
        self.on_deferred: Callable[[str, int], None] | None = None

    async def enqueue(self, tenant: str, interaction_id: str, fence: int) -> None:
        """Queue the job as arq would, and give it its turn among its tenant's, with a token for one idle
        worker (wake.lua): one round trip, where arq's enqueue and a separate token took four."""
        job = keys.job_id(tenant, interaction_id, fence)
        with spans.enqueue(self.queue_name, job, interaction_id) as trace:
            data, now = self._run_job(tenant, interaction_id, fence, trace)
            names = [keys.arq_job(job), result_key_prefix + job, self.queue_name, keys.wake(self.queue_name)]
            args = [job, data, now, expires_extra_ms, _MAX_TOKENS, tenant]
            await self.scripts.wake(keys=names, args=args)

    async def queue_again(self, tenant: str, interaction_id: str, fence: int) -> None:
        """The reaper's: the job of a queued run nobody claimed in time, queued whether or not it is there
        still, and taken from any worker that marked it taken (wake_again.lua)."""
        job = keys.job_id(tenant, interaction_id, fence)
        with spans.enqueue(self.queue_name, job, interaction_id) as trace:
            data, now = self._run_job(tenant, interaction_id, fence, trace)
            names = [
                keys.arq_job(job),
                keys.arq_in_progress(job),
                self.queue_name,
                keys.wake(self.queue_name),
            ]
            args = [job, data, now, expires_extra_ms, _MAX_TOKENS, tenant]
            await self.scripts.wake_again(keys=names, args=args)

    def _run_job(
        self, tenant: str, interaction_id: str, fence: int, trace: dict[str, str] | None
    ) -> tuple[bytes, int]:
        """A run's job as arq serializes it, and when it is queued (ms). It carries the request that
        queued it (none for a reaper's requeue: the run's logs and upstream call name it) and the trace it
        is queued in (tracing on only), which the worker's run continues."""
        now = now_ms()
        request_id = context.request_id()
        kwargs: dict[str, object] = {"request_id": request_id} if request_id else {}
        if trace:
            kwargs["trace"] = trace
        data = serialize_job(
            JOB_NAME, (tenant, interaction_id, fence), kwargs, None, now, serializer=job_serializer
        )
        return data, now

    async def enqueue_call(
        self, job: str, function: str, args: tuple[object, ...], *, run_at_ms: int | None = None
    ) -> bool:
        """Queue a call of `function` as job `job` (nothing if that job is queued already), to run now or
        at `run_at_ms`. A job for later also goes in the queue's deferred set, whose due jobs a worker gives
        a token at their time (due.lua, server/runner/due_jobs.py), and its time is told on the due channel
        (keys.DUE_CHANNEL); its data lives a day past that time, as arq keeps a deferred job's. Returns
        whether it was queued."""
        now = now_ms()
        data = serialize_job(function, args, {}, None, now, serializer=job_serializer)
        names = [keys.arq_job(job), result_key_prefix + job, self.queue_name, keys.wake(self.queue_name)]
        score = now if run_at_ms is None else max(now, run_at_ms)
        wake: list[object] = [job, data, score, score - now + expires_extra_ms, _MAX_TOKENS, tenant_of(job)]
        if score > now:
            names.append(keys.deferred(self.queue_name))
            wake.append(keys.DUE_CHANNEL)
        queued = await self.scripts.wake(keys=names, args=wake)
        if queued and score > now:
            self.note_deferred(job, score)
        return bool(queued)

    def note_deferred(self, job: str, due_ms: int) -> None:
        """`job` is queued for later, due at `due_ms`: the worker's timer hears of it (`on_deferred`)."""
        if self.on_deferred is not None:
            self.on_deferred(job, due_ms)

    def heard_due(self, message: str) -> None:
        """A job queued for later, as DUE_CHANNEL tells every process ("<due ms> <job>")."""
        due, _, job = message.partition(" ")
        if job and due.isdigit():
            self.note_deferred(job, int(due))

    async def push_due(self, again_ms: int) -> tuple[str, int] | None:
        """A turn for each job queued for later that is due now (due.lua), each due again `again_ms`
        later until taken; returns the job due first of those left and its due time (ms), None when no
        job waits for later."""
        names = [keys.deferred(self.queue_name), self.queue_name, keys.wake(self.queue_name)]
        args = [now_ms(), again_ms, _DUE_AT_ONCE, _MAX_TOKENS, in_progress_key_prefix]
        args += [_QUICK_PREFIXES, FIRE_AGAIN_MS, *PREFIXES]
        first: list[bytes | int] | None = await self.scripts.due(keys=names, args=args)
        if not first:
            return None
        job, due_ms = first
        return (job.decode() if isinstance(job, bytes) else str(job)), int(due_ms)

    async def next_wake(self, seconds: float) -> str | None:
        """Wait up to `seconds` for a queued job's token (a blocking pop: one job, one worker): what it says
        is store/turns.py's `woken_by`."""
        token = await self.blocking.blpop([keys.wake(self.queue_name)], timeout=seconds)
        return None if token is None else token[1].decode()

    async def hand_back_token(self, job: str) -> None:
        """Put back a token this worker took but will not act on (it is stopping), for another worker."""
        await self.commands.rpush(keys.wake(self.queue_name), job)

    async def wake_for(self, tenant: str, interaction_id: str, fence: int) -> None:
        """A turn for a run's job still queued past its pickup deadline (wake_turn.lua): the token queued
        with it went to a worker that died before taking the job (a token is popped, then acted on), or
        an older version queued it with a token that names it. Without this one, only a worker's full read
        of the queue would find the job, which comes after 15 empty waits for tokens: never while other
        jobs keep coming. A turn for a job that another worker takes meanwhile is harmless (take_turn.lua
        passes over it)."""
        job = keys.job_id(tenant, interaction_id, fence)
        await self.scripts.wake_turn(keys=[keys.wake(self.queue_name)], args=[job, tenant, _MAX_TOKENS])

    async def take(self, job: str, in_progress_ms: int) -> bytes | None:
        """Mark a queued job as taken by this worker and read it (take.lua); None if it is not there to
        take (another worker has it, it is gone, or deferred: then `on_deferred` hears when it is due)."""
        taken: bytes | int | None = await self.scripts.take(
            keys=[
                self.queue_name,
                keys.arq_job(job),
                keys.arq_in_progress(job),
                keys.deferred(self.queue_name),
            ],
            args=[job, now_ms(), in_progress_ms],
        )
        if isinstance(taken, int):
            self.note_deferred(job, taken)
            return None
        return taken

    async def finish(self, job: str) -> None:
        """A job ran (or cannot run): out of the queue first, so that no worker takes it between the two
        commands, then its keys (arq's retry count too, kept by workers of older versions)."""
        await self.commands.zrem(self.queue_name, job)
        await self.commands.delete(keys.arq_job(job), keys.arq_in_progress(job), retry_key_prefix + job)

    async def release(self, job: str) -> None:
        """A job this worker stopped running stays queued for another, as arq leaves a cancelled job."""
        await self.commands.delete(keys.arq_in_progress(job))

    async def hold(self, job: str, mark_ms: int) -> None:
        """This worker's mark on a job it took lasts `mark_ms` from now (one gone already is not made)."""
        await self.commands.pexpire(keys.arq_in_progress(job), mark_ms)

    async def ready(self, limit: int) -> list[str]:
        """Up to `limit` jobs due by now and in progress nowhere, the earliest first (ready.lua)."""
        args = [now_ms(), in_progress_key_prefix, limit, _READ_LOOKS]
        found: list[Any] = await self.scripts.ready(keys=[self.queue_name], args=args)
        return [text(each) for each in found]

    async def waiting(self, tenant: str, interaction_id: str, fence: int) -> bool:
        """Whether the job for this fence is still in arq's queue, not yet taken by a worker."""
        job = keys.job_id(tenant, interaction_id, fence)
        queued = await self.commands.exists(keys.arq_job(job))
        taken = await self.commands.exists(keys.arq_in_progress(job))
        return bool(queued) and not taken
