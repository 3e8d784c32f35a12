"""The repository: every read and write of interactions, each one Redis round trip (mostly one script)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import msgspec
from redis.asyncio import Redis

from ..protocol.steps import Step
from ..settings import RunnerSettings, StoreSettings
from . import keys
from .keys import Field
from .records import Output, Record, StoredConfig, decode_config, decode_output, decode_steps, encode
from .scripts import Scripts


class NotFound(Exception):
    """An interaction that does not exist for this tenant (unknown, expired, deleted or someone else's)."""

    def __init__(self, interaction_id: str) -> None:
        # an id as sent can be megabytes long: the message shows its start
        shown = interaction_id if len(interaction_id) <= 80 else interaction_id[:80] + "..."
        super().__init__(f"Interaction {shown!r} was not found")
        self.interaction_id = interaction_id


class Unfinished(Exception):
    """A chain cannot continue from an interaction that is still running."""

    def __init__(self, interaction_id: str) -> None:
        super().__init__(f"Interaction {interaction_id!r} has not finished yet")
        self.interaction_id = interaction_id


class ChainTooDeep(Exception):
    def __init__(self, interaction_id: str, depth: int) -> None:
        super().__init__(f"The chain ending at {interaction_id!r} is longer than {depth} interactions")
        self.interaction_id = interaction_id


class NewRecord(msgspec.Struct, kw_only=True):
    """An interaction to store: as it starts, or (for a foreground call nobody can address yet) finished."""

    status: str
    created: str
    updated: str | None = None
    background: bool = False
    logged: bool = False
    seq: int = 0
    config: StoredConfig
    input_steps: list[Step]
    #: set when the record is stored finished
    output: Output | None = None


class Chain(msgspec.Struct, kw_only=True):
    """What checking a chain gives: its steps, oldest first (None unless walked), and the earliest expiry
    among its interactions, for the next turn's record."""

    steps: list[Step] | None
    expiry: str
    #: the new interaction's place in the chain (1 for a first turn)
    depth: int = 1


class Claim(msgspec.Struct, frozen=True):
    #: ok | finished | stale | exhausted | missing
    outcome: str
    fence: int = 0
    seq: int = 0
    detail: str = ""


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
    #: the run's end (output and terminal events) is written
    settled: bool


class Settle(msgspec.Struct, frozen=True):
    #: ok | fenced | status | missing
    outcome: str
    #: the current status when not ok; the last event seq when ok
    detail: str = ""


def now_ms() -> int:
    return int(time.time() * 1000)


def _netstrings(values: list[Any]) -> bytes:
    parts = []
    for value in values:
        raw = value if isinstance(value, bytes) else str(value).encode()
        parts.append(b"%d:%s" % (len(raw), raw))
    return b"".join(parts)


def _str(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


_RECORD_FIELDS = (
    Field.STATUS,
    Field.CREATED,
    Field.UPDATED,
    Field.PREV,
    Field.BACKGROUND,
    Field.LOG,
    Field.SEQ,
    Field.CONFIG,
    Field.INPUT,
    Field.OUTPUT,
    Field.SETTLED,
)


class Repository:
    def __init__(self, redis: Redis, store: StoreSettings, runner: RunnerSettings) -> None:
        self.redis = redis
        # redis-py types hash and list commands as "sync or async"; on this client they are awaitables
        self._commands: Any = redis
        self.scripts = Scripts(redis)
        self.store = store
        self.runner = runner
        self.ttl_ms = store.ttl_seconds * 1000
        self.lease_ms = int(runner.lease_seconds * 1000)

    # -- create and read ---------------------------------------------------------------------------------

    async def create(
        self,
        tenant: str,
        interaction_id: str,
        record: NewRecord,
        *,
        previous_interaction_id: str | None,
        chain: str,
        chain_expiry: str = "",
        depth: int = 0,
        claim: bool = False,
        pickup_deadline: int | None = None,
    ) -> Chain:
        """Store a new interaction after checking the chain it continues (`chain`: "walk" to also get the
        chain's steps, "check", or "skip" when `check_chain` did it already, giving `chain_expiry`).

        With `claim`, the caller runs it now: it holds fence 1 and a lease. With `pickup_deadline`, a queued
        run is watched from now: if no worker has claimed it by then, the reaper looks for its job.
        """
        fields: list[Any] = [
            Field.STATUS, record.status,
            Field.CREATED, record.created,
            Field.UPDATED, record.updated or record.created,
            Field.BACKGROUND, "1" if record.background else "0",
            Field.LOG, "1" if record.logged else "0",
            Field.SEQ, record.seq,
            Field.FENCE, "1" if claim else "0",
            Field.ATTEMPTS, "1" if claim else "0",
            Field.CONFIG, encode(record.config),
            Field.INPUT, encode(record.input_steps),
        ]  # fmt: skip
        if record.output is not None:
            fields += [Field.OUTPUT, encode(record.output), Field.SETTLED, "1"]
        if previous_interaction_id:
            fields += [Field.PREV, previous_interaction_id]
        if chain == "skip":
            fields += [Field.DEPTH, depth or 1]
        deadline: int | str = ""
        if claim:
            deadline = now_ms() + self.lease_ms
        elif pickup_deadline is not None:
            deadline = pickup_deadline
        return await self._create(
            tenant, interaction_id, previous_interaction_id, chain, chain_expiry, deadline, fields
        )

    async def check_chain(self, tenant: str, previous_interaction_id: str | None, *, walk: bool) -> Chain:
        """Check (and keep alive) the chain a new interaction will continue, storing nothing yet; with
        `walk`, also return its steps."""
        if not previous_interaction_id:
            return Chain(steps=[], expiry="", depth=1)
        return await self._create(
            tenant, "", previous_interaction_id, "walk" if walk else "check", "", "", []
        )

    async def _create(
        self,
        tenant: str,
        interaction_id: str,
        previous_interaction_id: str | None,
        chain: str,
        chain_expiry: str,
        lease_deadline: int | str,
        fields: list[Any],
    ) -> Chain:
        result = await self.scripts.create(
            keys=[keys.interaction(tenant, interaction_id), keys.RUNNING],
            args=[
                keys.tenant_prefix(tenant),
                previous_interaction_id or "",
                self.ttl_ms,
                self.store.max_chain_depth,
                now_ms(),
                chain,
                chain_expiry,
                lease_deadline,
                keys.member(tenant, interaction_id),
                *([_netstrings(fields)] if fields else []),
            ],
        )
        steps = self._chain_result(result, previous_interaction_id or "")
        return Chain(steps=steps if chain == "walk" else None, expiry=_str(result[2]), depth=int(result[3]))

    def _chain_result(self, result: Sequence[Any], start: str) -> list[Step]:
        outcome = _str(result[0])
        if outcome == "missing":
            raise NotFound(_str(result[1]))
        if outcome == "unfinished":
            raise Unfinished(_str(result[1]))
        if outcome == "too_deep":
            raise ChainTooDeep(start, self.store.max_chain_depth)
        if outcome == "exists":
            raise RuntimeError("interaction id collision")
        blobs = result[1]
        history: list[Step] = []
        for i in range(len(blobs) - 2, -1, -2):
            history += decode_steps(blobs[i])
            output = decode_output(blobs[i + 1])
            if output is not None:
                history += output.steps
        return history

    async def get(self, tenant: str, interaction_id: str) -> Record:
        values = await self._commands.hmget(keys.interaction(tenant, interaction_id), _RECORD_FIELDS)
        status, created, updated, prev, bg, log, seq, cfg, inp, out, settled = values
        if status is None or cfg is None:
            raise NotFound(interaction_id)
        return Record(
            id=interaction_id,
            status=_str(status),
            created=_str(created),
            updated=_str(updated),
            previous_interaction_id=_str(prev) if prev else None,
            background=bg == b"1",
            logged=log == b"1",
            seq=int(seq or 0),
            config=decode_config(cfg),
            input_steps=decode_steps(inp),
            output=decode_output(out),
            settled=settled is not None,
        )

    async def replace_input(self, tenant: str, interaction_id: str, input_steps: list[Step]) -> None:
        """This turn's input steps, completed from the chain (a second write, only when needed)."""
        await self.scripts.set_input(
            keys=[keys.interaction(tenant, interaction_id)], args=[encode(input_steps)]
        )

    async def status(self, tenant: str, interaction_id: str) -> str | None:
        value = await self._commands.hget(keys.interaction(tenant, interaction_id), Field.STATUS)
        return _str(value) if value is not None else None

    async def delete(self, tenant: str, interaction_id: str) -> bool:
        deleted = await self.redis.delete(
            keys.interaction(tenant, interaction_id),
            keys.events(tenant, interaction_id),
            keys.cancel_ack(tenant, interaction_id),
        )
        await self.redis.zrem(keys.RUNNING, keys.member(tenant, interaction_id))
        return bool(deleted)

    async def broadcast_forget(self, tenant: str) -> None:
        await self.redis.publish(keys.FORGET_CHANNEL, tenant)

    # -- runs ------------------------------------------------------------------------------------------

    async def claim(self, tenant: str, interaction_id: str, queued_fence: int) -> Claim:
        result = await self.scripts.claim(
            keys=[keys.interaction(tenant, interaction_id), keys.RUNNING],
            args=[
                now_ms() + self.lease_ms,
                keys.member(tenant, interaction_id),
                self.runner.max_attempts,
                str(queued_fence),
            ],
        )
        outcome = _str(result[0])
        if outcome == "ok":
            return Claim("ok", fence=int(result[1]), seq=int(result[2]))
        return Claim(outcome, detail=_str(result[1]) if len(result) > 1 else "")

    async def append(self, runs: Sequence[RunBatch]) -> list[str]:
        """Write the batches of many runs in one call and renew their leases; also their heartbeat.

        Returns, per run, "ok", "fenced" or the status that stopped the write (e.g. "cancelled").
        """
        keys_: list[str] = [keys.RUNNING]
        args: list[Any] = [now_ms() + self.lease_ms, self.ttl_ms]
        for run in runs:
            keys_ += [
                keys.interaction(run.tenant, run.interaction_id),
                keys.events(run.tenant, run.interaction_id),
            ]
            args += [run.fence, keys.member(run.tenant, run.interaction_id), len(run.events)]
            for seq, frame in run.events:
                args += [seq, frame]
        results = await self.scripts.append(keys=keys_, args=args)
        return [_str(r) for r in results]

    async def log_frames(self, tenant: str, interaction_id: str, after: int = 0) -> list[bytes]:
        """The frames of an interaction's event log after event `after` (all of them by default)."""
        entries = await self._commands.xrange(keys.events(tenant, interaction_id), f"({0}-{after}", "+")
        return [fields[b"e"] for _entry_id, fields in entries]

    async def finish(
        self,
        tenant: str,
        interaction_id: str,
        *,
        fence: int | None,
        expect: str,
        status: str,
        output: Output,
        updated: str,
        events: Sequence[tuple[int, bytes]] | Sequence[bytes],
    ) -> Settle:
        """End a run: status `expect` -> `status`, the output and the terminal events, atomically.

        `fence=None` is an administrative settle (no live run): the events are numbered by Redis.
        """
        args: list[Any] = [
            "" if fence is None else fence,
            expect,
            status,
            encode(output),
            updated,
            self.store.event_log_ttl_seconds * 1000,
            keys.member(tenant, interaction_id),
            60_000,
        ]
        for event in events:
            if isinstance(event, tuple):
                args += [event[0], event[1]]
            else:
                args.append(event)
        result = await self.scripts.finish(
            keys=[
                keys.interaction(tenant, interaction_id),
                keys.events(tenant, interaction_id),
                keys.RUNNING,
                keys.cancel_ack(tenant, interaction_id),
            ],
            args=args,
        )
        return Settle(_str(result[0]), _str(result[1]) if len(result) > 1 else "")

    async def cancel(self, tenant: str, interaction_id: str, updated: str) -> Settle:
        """queued|in_progress -> cancelled, and the cancel signal to every process. detail: prior status."""
        result = await self.scripts.cancel(
            keys=[keys.interaction(tenant, interaction_id)],
            args=[keys.CANCEL_CHANNEL, keys.member(tenant, interaction_id), updated],
        )
        return Settle(_str(result[0]), _str(result[1]) if len(result) > 1 else "")

    async def wait_cancel_ack(self, redis: Redis, tenant: str, interaction_id: str, seconds: float) -> bool:
        """Wait until the cancelled run has saved its output (BLPOP on a blocking connection)."""
        blocking: Any = redis
        got = await blocking.blpop([keys.cancel_ack(tenant, interaction_id)], timeout=seconds)
        return got is not None

    # -- lost runs -------------------------------------------------------------------------------------

    async def due_runs(self, limit: int = 100) -> list[str]:
        retry_ms = max(self.lease_ms, 5000)
        members = await self.scripts.reap(keys=[keys.RUNNING], args=[now_ms(), retry_ms, limit])
        return [_str(m) for m in members]

    async def run_state(self, tenant: str, interaction_id: str) -> RunState:
        """What the reaper needs to know of a run whose lease ran out."""
        status, bg, attempts, fence, settled = await self._commands.hmget(
            keys.interaction(tenant, interaction_id),
            [Field.STATUS, Field.BACKGROUND, Field.ATTEMPTS, Field.FENCE, Field.SETTLED],
        )
        return RunState(
            status=_str(status) if status is not None else None,
            background=bg == b"1",
            attempts=int(attempts or 0),
            fence=int(fence or 0),
            settled=settled is not None,
        )

    async def job_waiting(self, tenant: str, interaction_id: str, fence: int) -> bool:
        """Whether the job for this fence is still in arq's queue, not yet taken by a worker."""
        job = keys.job_id(tenant, interaction_id, fence)
        queued, taken = (
            await self._commands.exists(keys.arq_job(job)),
            await self._commands.exists(keys.arq_in_progress(job)),
        )
        return bool(queued) and not taken

    async def watch(self, tenant: str, interaction_id: str, deadline_ms: int) -> None:
        """Give a run (not yet claimed) until `deadline_ms` before the reaper looks at it again."""
        await self.redis.zadd(keys.RUNNING, {keys.member(tenant, interaction_id): deadline_ms})

    async def requeue(
        self, tenant: str, interaction_id: str, seen_fence: int, pickup_ms: int, *, refund: bool
    ) -> int | None:
        """Hand a run to a new job: returns the fence the new job is queued under."""
        result = await self.scripts.requeue(
            keys=[keys.interaction(tenant, interaction_id), keys.RUNNING],
            args=[
                now_ms() + pickup_ms,
                keys.member(tenant, interaction_id),
                seen_fence,
                "1" if refund else "0",
            ],
        )
        return int(result[1]) if _str(result[0]) == "ok" else None

    async def forget_run(self, tenant: str, interaction_id: str) -> None:
        await self.redis.zrem(keys.RUNNING, keys.member(tenant, interaction_id))

    # -- idempotency -----------------------------------------------------------------------------------

    async def remember_idempotency(
        self, tenant: str, key_digest: str, interaction_id: str, body_digest: str
    ) -> tuple[str, str] | None:
        """Record the key; if it is already known, return (interaction id, body digest) seen with it."""
        name = keys.idempotency(tenant, key_digest)
        value = f"{interaction_id} {body_digest}"
        if await self.redis.set(name, value, nx=True, ex=self.store.idempotency_ttl_seconds):
            return None
        existing = await self.redis.get(name)
        if existing is None:
            return None
        known_id, _, known_digest = _str(existing).partition(" ")
        return known_id, known_digest

    async def forget_idempotency(self, tenant: str, key_digest: str) -> None:
        await self.redis.delete(keys.idempotency(tenant, key_digest))
