"""Runs of interactions: the lease, the fence and every status change after creation.

Each status change is an event of the lifecycle table (protocol.lifecycle), sent to its script with the
table's moves for it; a refused change comes back as an exception of `server.errors` (Fenced,
StatusChanged, StaleJob, AttemptsExhausted, NotFound), never as a string to branch on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import msgspec
from redis.asyncio import Redis

from ..errors import AttemptsExhausted, Fenced, NotFound, StaleJob, StatusChanged, StoreConflict
from ..observability import usage as usage_metrics
from ..protocol import lifecycle
from ..protocol.lifecycle import Event
from ..protocol.records import Output
from ..settings import RunnerSettings, StoreSettings
from . import keys, search_tags
from .commands import now_ms, text, typed
from .jobs import event_job
from .keys import Field
from .queue_side import QueueSide
from .records import encode
from .scripts import Scripts
from .usage import amounts, today_key

_WRITABLE = " ".join(sorted(lifecycle.WRITABLE))
_NOTIFIED = " ".join(sorted(lifecycle.NOTIFIED))
#: the events finish.lua is given: each ends the interaction (it counts the interaction's usage)
_ENDS = frozenset(lifecycle.END_EVENTS.values()) | {Event.STOP, Event.LOSE}
assert all(target in lifecycle.FINISHED for (_s, ev), target in lifecycle.TRANSITIONS.items() if ev in _ENDS)
#: how long a cancel's acknowledgement waits for a cancel to come and read it
_ACK_TTL_MS = 60_000


def _moves(event: Event) -> str:
    return " ".join(f"{source}>{target}" for source, target in lifecycle.moves(event))


class Claim(msgspec.Struct, frozen=True):
    fence: int
    #: the last event seq of its log (a re-run continues the numbering)
    seq: int


class Finished(msgspec.Struct, frozen=True):
    #: the last event seq of its log, and the status it ended with
    seq: int
    status: str


class RunBatch(msgspec.Struct, frozen=True):
    """One run's part of a batched write: its numbered SSE frames (none for a heartbeat)."""

    tenant: str
    interaction_id: str
    fence: int
    events: Sequence[tuple[int, bytes]]


class RunState(msgspec.Struct, frozen=True, kw_only=True):
    status: str | None
    background: bool
    attempts: int
    fence: int
    #: its turn is a remote run (a Google agent's), which a re-run follows to its end
    remote: bool = False


def _refused(interaction_id: str, result: Sequence[Any]) -> StoreConflict | NotFound:
    """The exception for a script's refusal: {'missing'} | {'fenced', current} | {'status', current}."""
    outcome = text(result[0])
    current = text(result[1]) if len(result) > 1 else ""
    if outcome == "missing":
        return NotFound(interaction_id)
    if outcome == "fenced":
        return Fenced(current)
    if outcome == "stale":
        return StaleJob(current)
    if outcome == "exhausted":
        return AttemptsExhausted(int(current))
    return StatusChanged(current)


class Runs:
    def __init__(
        self,
        redis: Redis,
        blocking: Redis,
        scripts: Scripts,
        queue: QueueSide,
        store: StoreSettings,
        runner: RunnerSettings,
        queue_name: str,
    ) -> None:
        self.redis = typed(redis)
        self.queue_name = queue_name
        self.blocking = typed(blocking)
        self.scripts = scripts
        #: the running set, the cancel channel and the webhook jobs (store/queue_side.py)
        self.queue = queue
        self.max_attempts = runner.max_attempts
        self.ttl_ms = store.ttl_seconds * 1000
        self.log_ttl_ms = store.event_log_ttl_seconds * 1000
        self.lease_ms = int(runner.lease_seconds * 1000)
        self.usage_ttl_ms = store.usage_ttl_seconds * 1000

    async def claim(self, tenant: str, interaction_id: str, queued_fence: int) -> Claim:
        """CLAIM for the job queued under `queued_fence`: a new fence and a lease."""
        deadline, member = now_ms() + self.lease_ms, keys.member(tenant, interaction_id)
        result = await self.scripts.claim(
            keys=[keys.interaction(tenant, interaction_id), *self.queue.script_keys(keys.RUNNING)],
            args=[deadline, member, self.max_attempts, str(queued_fence), _moves(Event.CLAIM)],
        )
        if text(result[0]) != "ok":
            raise _refused(interaction_id, result)
        if not self.queue.together:
            await self.queue.watch(member, deadline)
        return Claim(fence=int(result[1]), seq=int(result[2]))

    async def append(self, runs: Sequence[RunBatch]) -> list[StoreConflict | None]:
        """Write the batches of many runs in one call and renew their leases; also their heartbeat.

        Per run: None once written, or why it was not (Fenced, or StatusChanged: e.g. a cancel). Apart
        from the running set (a Cluster), one call per tenant, whose keys share a slot."""
        deadline = now_ms() + self.lease_ms
        if self.queue.together:
            return await self._append(runs, deadline, [keys.RUNNING])
        by_tenant: dict[str, list[RunBatch]] = {}
        for run in runs:
            by_tenant.setdefault(run.tenant, []).append(run)
        groups = list(by_tenant.values())
        written = await asyncio.gather(*(self._append(group, deadline, []) for group in groups))
        outcomes: dict[int, StoreConflict | None] = {}
        renewed: dict[str, int] = {}
        for group, results in zip(groups, written, strict=True):
            for run, outcome in zip(group, results, strict=True):
                outcomes[id(run)] = outcome
                if outcome is None:
                    renewed[keys.member(run.tenant, run.interaction_id)] = deadline
        await self.queue.renew(renewed)
        return [outcomes[id(run)] for run in runs]

    async def _append(
        self, runs: Sequence[RunBatch], deadline: int, running: list[str]
    ) -> list[StoreConflict | None]:
        keys_: list[str] = []
        args: list[Any] = [deadline, self.ttl_ms, _WRITABLE]
        for run in runs:
            keys_ += [
                keys.interaction(run.tenant, run.interaction_id),
                keys.events(run.tenant, run.interaction_id),
            ]
            args += [run.fence, keys.member(run.tenant, run.interaction_id), len(run.events)]
            for seq, frame in run.events:
                args += [seq, frame]
        results = await self.scripts.append(keys=keys_ + running, args=args)
        return [_append_outcome(text(r)) for r in results]

    async def finish(
        self,
        tenant: str,
        interaction_id: str,
        *,
        event: Event,
        fence: int | None,
        output: Output,
        updated: str,
        events: Sequence[tuple[int, bytes]] | Sequence[bytes],
        calls: int = 0,
    ) -> Finished:
        """End a run by `event`: the status, the output and the terminal events, atomically.

        `fence=None` is an administrative settle (no live run): the events are numbered by Redis. An end
        webhooks hear of queues their job in the same step, and the output's usage and the run's `calls`
        (model calls) go to the tenant's usage of the day in it too (store/usage.py)."""
        assert event in _ENDS, event
        notify = event_job(self.queue_name, tenant, interaction_id)
        args: list[Any] = [
            "" if fence is None else fence,
            _moves(event),
            lifecycle.CANCELLING,
            encode(output),
            updated,
            self.log_ttl_ms,
            keys.member(tenant, interaction_id),
            _ACK_TTL_MS,
            notify.job,
            notify.data,
            notify.now,
            notify.ttl_ms,
            notify.max_tokens,
            _NOTIFIED,
            used := amounts(output.usage, calls),
            self.usage_ttl_ms,
        ]
        for item in events:
            args += item if isinstance(item, tuple) else [item]
        gate, *shared = notify.keys
        result = await self.scripts.finish(
            keys=[
                keys.interaction(tenant, interaction_id),
                keys.events(tenant, interaction_id),
                keys.cancel_ack(tenant, interaction_id),
                gate,
                today_key(tenant),
                *self.queue.script_keys(keys.RUNNING, *shared),
            ],
            args=args,
        )
        if text(result[0]) != "ok":
            raise _refused(interaction_id, result)
        usage_metrics.counted(search_tags.model_of(text(result[4])), text(result[2]), used, tenant)
        if not self.queue.together:
            # in this order: a crash between leaves an ended run watched, which the reaper finishes off
            if text(result[3]):
                await self.queue.queue_event_job(notify)
            await self.queue.forget(keys.member(tenant, interaction_id))
        return Finished(seq=int(result[1]), status=text(result[2]))

    async def cancel(self, tenant: str, interaction_id: str, updated: str) -> str:
        """CANCEL, and the cancel signal to every process; returns the status it was cancelled from."""
        member = keys.member(tenant, interaction_id)
        channel = keys.CANCEL_CHANNEL if self.queue.together else ""
        result = await self.scripts.cancel(
            keys=[keys.interaction(tenant, interaction_id)],
            args=[channel, member, updated, _moves(Event.CANCEL)],
        )
        if text(result[0]) != "ok":
            raise _refused(interaction_id, result)
        if not channel:
            # a message lost here still stops the run: its next write finds it cancelling
            await self.queue.cancel([member])
        return text(result[1])

    async def wait_cancel_ack(self, tenant: str, interaction_id: str, seconds: float) -> bool:
        """Wait until the cancelled run has saved its output (a blocking pop on the blocking client).
        The acknowledgement is put back for any other cancel waiting on the same interaction."""
        key = keys.cancel_ack(tenant, interaction_id)
        got = await self.blocking.blpop([key], timeout=seconds)
        if got is None:
            return False
        await self.redis.rpush(key, "1")
        await self.redis.pexpire(key, _ACK_TTL_MS)
        return True

    async def requeue(
        self, tenant: str, interaction_id: str, seen_fence: int, pickup_ms: int, *, refund: bool
    ) -> int:
        """REQUEUE: hand the run to a new job; returns the fence the new job is queued under."""
        deadline, member = now_ms() + pickup_ms, keys.member(tenant, interaction_id)
        result = await self.scripts.requeue(
            keys=[keys.interaction(tenant, interaction_id), *self.queue.script_keys(keys.RUNNING)],
            args=[deadline, member, seen_fence, "1" if refund else "0", _moves(Event.REQUEUE)],
        )
        if text(result[0]) != "ok":
            raise _refused(interaction_id, result)
        if not self.queue.together:
            await self.queue.watch(member, deadline)
        return int(result[1])

    # -- lost runs -------------------------------------------------------------------------------------

    async def due(self, limit: int = 100) -> list[str]:
        """Runs whose lease (or pickup deadline) ran out, each pushed back so a dying reaper loses none."""
        retry_ms = max(self.lease_ms, 5000)
        members = await self.queue.scripts.reap(keys=[keys.RUNNING], args=[now_ms(), retry_ms, limit])
        return [text(m) for m in members]

    async def state(self, tenant: str, interaction_id: str) -> RunState:
        """What the reaper needs to know of a run whose lease ran out."""
        status, bg, attempts, fence, remote = await self.redis.hmget(
            keys.interaction(tenant, interaction_id),
            [Field.STATUS, Field.BACKGROUND, Field.ATTEMPTS, Field.FENCE, Field.REMOTE],
        )
        return RunState(
            status=text(status) if status is not None else None,
            background=bg == b"1",
            attempts=int(attempts or 0),
            fence=int(fence or 0),
            remote=remote is not None,
        )

    async def set_remote(self, tenant: str, interaction_id: str, fence: int, remote_id: str) -> None:
        """Record the remote run of the run under `fence` (set_remote.lua); refused: a conflict, NotFound."""
        result = await self.scripts.set_remote(
            keys=[keys.interaction(tenant, interaction_id)], args=[fence, _WRITABLE, remote_id]
        )
        if text(result) != "ok":
            raise _refused(interaction_id, [result])

    async def watch(self, tenant: str, interaction_id: str, deadline_ms: int) -> None:
        """Give a run (not yet claimed) until `deadline_ms` before the reaper looks at it again."""
        await self.queue.watch(keys.member(tenant, interaction_id), deadline_ms)

    async def forget(self, tenant: str, interaction_id: str) -> None:
        await self.queue.forget(keys.member(tenant, interaction_id))

    async def forget_ended(self, tenant: str, interaction_id: str, status: str | None) -> None:
        """Forget a run the reaper found ended (or gone). Apart from the running set, a crash may have cut
        its settle short of queueing its webhook job (store/queue_side.py): it is queued again, which does
        nothing when it is queued already, and sends nothing twice (the delivered marks)."""
        if not self.queue.together and status in lifecycle.NOTIFIED:
            await self.queue.queue_event_job(event_job(self.queue_name, tenant, interaction_id))
        await self.forget(tenant, interaction_id)


def _append_outcome(result: str) -> StoreConflict | None:
    if result == "ok":
        return None
    return Fenced() if result == "fenced" else StatusChanged(result)
