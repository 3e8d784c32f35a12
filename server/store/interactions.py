"""Interaction records: check a chain, store a new interaction, read it, delete it.

Each call is one Redis round trip (mostly one script), and chain errors come back as the exceptions of
`server.errors`, never as strings to branch on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from redis.asyncio import Redis

from ..errors import AlreadyStored, ChainTooDeep, KeyUsed, NotFound, Unfinished
from ..observability import usage as usage_metrics
from ..protocol import lifecycle
from ..protocol.records import Record
from ..protocol.steps import Step
from ..settings import RunnerSettings, StoreSettings
from . import keys, search_tags
from .commands import now_ms, text, typed
from .deletions import Tally
from .idempotency import digest, parse
from .jobs import EventJob, event_job
from .keys import Field
from .new_records import NewRecord, body, key_args, packed_fields, subscribed
from .queue_side import QueueSide
from .records import META_FIELDS, decode_output, decode_steps, encode, record_of
from .scripts import Scripts
from .usage import amounts, today_key

_UNFINISHED = " ".join(sorted(lifecycle.UNFINISHED))


class Chain(msgspec.Struct, kw_only=True):
    """What checking a chain gives: its steps, oldest first (None unless walked), the earliest expiry
    among its interactions, the new interaction's place in it (1 for a first turn) and the id of its first
    interaction ('' for a first turn)."""

    steps: list[Step] | None
    expiry: str
    depth: int = 1
    root: str = ""


class Interactions:
    def __init__(
        self,
        redis: Redis,
        scripts: Scripts,
        queue: QueueSide,
        store: StoreSettings,
        runner: RunnerSettings,
        queue_name: str,
    ) -> None:
        self.redis = typed(redis)
        self.queue_name = queue_name
        self.scripts = scripts
        #: the running set, the channels and the webhook jobs (store/queue_side.py)
        self.queue = queue
        self.store = store
        self.ttl_ms = store.ttl_seconds * 1000
        self.lease_ms = int(runner.lease_seconds * 1000)
        self.usage_ttl_ms = store.usage_ttl_seconds * 1000

    async def check_chain(self, tenant: str, previous_interaction_id: str | None, *, walk: bool) -> Chain:
        """Check (and keep alive) the chain a new interaction will continue, storing nothing yet; with
        `walk`, also return its steps."""
        if not previous_interaction_id:
            return Chain(steps=[], expiry="", depth=1)
        return await self._create(
            tenant, "", previous_interaction_id, "walk" if walk else "check", None, "", b""
        )

    async def create(
        self,
        tenant: str,
        interaction_id: str,
        record: NewRecord,
        *,
        previous_interaction_id: str | None,
        walk: bool,
        claim: bool = False,
        pickup_deadline: int | None = None,
    ) -> Chain:
        """Check the chain it continues (with `walk`, also returning its steps) and store a new interaction.

        With `claim`, the caller runs it now: it holds fence 1 and a lease. With `pickup_deadline`, a queued
        run is watched from now: if no worker has claimed it by then, the reaper looks for its job. A record
        with a `key` (its Idempotency-Key) is stored with it: KeyUsed when the key made one already."""
        deadline: int | str = ""
        if claim:
            deadline = now_ms() + self.lease_ms
        elif pickup_deadline is not None:
            deadline = pickup_deadline
        packed = packed_fields(record, claimed=claim, prev=previous_interaction_id)
        mode = "walk" if walk else "check"
        return await self._create(
            tenant, interaction_id, previous_interaction_id, mode, None, deadline, packed, record
        )

    async def store_finished(
        self,
        tenant: str,
        interaction_id: str,
        record: NewRecord,
        *,
        previous_interaction_id: str | None,
        chain: Chain,
    ) -> None:
        """Store an interaction that has ended, continuing a chain `check_chain` checked before it ran; what
        it used (its usage, its model calls) goes to its tenant's usage of the day in the same step."""
        packed = packed_fields(record, claimed=False, prev=previous_interaction_id, depth=chain.depth)
        await self._create(tenant, interaction_id, previous_interaction_id, "skip", chain, "", packed, record)

    async def _create(
        self,
        tenant: str,
        interaction_id: str,
        previous_interaction_id: str | None,
        mode: str,
        checked: Chain | None,
        lease_deadline: int | str,
        packed: bytes,
        record: NewRecord | None = None,
    ) -> Chain:
        """`checked`: the chain as an earlier check found it (mode "skip"); `record`: the one `packed`
        stores (None: none); one stored already ended queues its webhook job and counts its usage."""
        ended = record is not None and record.status in lifecycle.NOTIFIED
        notify = event_job(self.queue_name, tenant, interaction_id, ends=ended)
        gate, *shared = notify.keys
        member = keys.member(tenant, interaction_id)
        watched = await self._watch_first(member, lease_deadline, ended=ended)
        result = await self.scripts.create(
            keys=[
                keys.interaction(tenant, interaction_id),
                gate,
                today_key(tenant),
                *self.queue.script_keys(keys.RUNNING, *shared),
            ],
            args=[
                keys.tenant_prefix(tenant),
                previous_interaction_id or "",
                self.ttl_ms,
                self.store.max_chain_depth,
                now_ms(),
                mode,
                checked.expiry if checked else "",
                lease_deadline,
                member,
                packed,
                _UNFINISHED,
                notify.job,
                notify.data,
                notify.ttl_ms,
                notify.max_tokens,
                "1" if record is not None and subscribed(record) else "",
                _tags(record, previous_interaction_id),
                checked.root if checked else "",
                *key_args(record.key if record else None),
                *((body(record) if record else ""), self.store.index_bucket_size),
                *(used := _usage_args(record, self.usage_ttl_ms)),
            ],
        )
        if record is not None and used[0] and text(result[0]) == "ok":
            _counted(tenant, record, used[0])
        if not self.queue.together:
            await self._after_create(result, member, watched=watched, notify=notify)
        steps = self._chain_steps(result, previous_interaction_id or "")
        return Chain(
            steps=steps if mode == "walk" else None,
            expiry=text(result[2]),
            depth=int(result[3]),
            root=text(result[4]),
        )

    async def _watch_first(self, member: str, lease_deadline: int | str, *, ended: bool) -> bool:
        """Whether a create is watched before it is stored (apart from the running set: a run, or one that
        ended, whose webhook job may be due), so that the reaper finds what a crash leaves (queue_side.py)."""
        if self.queue.together:
            return False
        if lease_deadline != "":
            await self.queue.watch(member, int(lease_deadline))
        elif ended:
            await self.queue.watch(member, now_ms() + self.lease_ms)
        return lease_deadline != "" or ended

    async def _after_create(
        self, result: Sequence[Any], member: str, *, watched: bool, notify: EventJob
    ) -> None:
        """Apart from the running set (store/queue_side.py): a stored interaction that ended queues its
        webhook job when create.lua found it due, and is then forgotten; so is a refused create. A run
        stays watched."""
        ok = text(result[0]) == "ok"
        if ok and text(result[5]):
            await self.queue.queue_event_job(notify)
        if watched and (not ok or notify.job):
            await self.queue.forget(member)

    def _chain_steps(self, result: Sequence[Any], start: str) -> list[Step]:
        outcome = text(result[0])
        if outcome == "missing":
            raise NotFound(text(result[1]))
        if outcome == "unfinished":
            raise Unfinished(text(result[1]))
        if outcome == "too_deep":
            raise ChainTooDeep(start, self.store.max_chain_depth)
        if outcome == "exists":
            raise AlreadyStored("an interaction with this id is stored already")
        if outcome == "repeat":
            raise KeyUsed(*parse(text(result[1])))
        blobs = result[1]
        history: list[Step] = []
        for i in range(len(blobs) - 2, -1, -2):
            history += decode_steps(blobs[i])
            output = decode_output(blobs[i + 1])
            if output is not None:
                history += output.steps
        return history

    async def get(self, tenant: str, interaction_id: str) -> Record:
        values = await self.scripts.read(keys=[keys.interaction(tenant, interaction_id)], args=META_FIELDS)
        if values[0] is None or values[len(META_FIELDS)] is None:
            raise NotFound(interaction_id)
        return record_of(interaction_id, values)

    async def made_by_key(self, tenant: str, idempotency_key: str) -> KeyUsed | None:
        """What a create's Idempotency-Key made, if it made one (store/idempotency.py); the interaction
        may have been deleted since."""
        value = await self.redis.get(keys.idempotency(tenant, digest(idempotency_key)))
        return None if value is None else KeyUsed(*parse(text(value)))

    async def status(self, tenant: str, interaction_id: str) -> str | None:
        value = await self.redis.hget(keys.interaction(tenant, interaction_id), Field.STATUS)
        return text(value) if value is not None else None

    async def status_and_remote(self, tenant: str, interaction_id: str) -> tuple[str | None, str | None]:
        """Its status and its remote run's id (None: no such interaction; no remote run)."""
        status, remote = await self.redis.hmget(
            keys.interaction(tenant, interaction_id), [Field.STATUS, Field.REMOTE]
        )
        return (text(status) if status is not None else None), (text(remote) if remote is not None else None)

    async def replace_input(self, tenant: str, interaction_id: str, input_steps: list[Step]) -> None:
        """This turn's input steps, completed from the chain (a second write, only when needed)."""
        await self.scripts.set_input(
            keys=[keys.interaction(tenant, interaction_id)], args=[encode(input_steps)]
        )

    async def delete(self, tenant: str, *interaction_ids: str, tally: Tally | None = None) -> int:
        """Delete interactions (with their logs, and their places in the search indexes); one still
        running is told to stop. `tally`: a purge's, counting what goes in the same step. Returns how
        many existed."""
        together = self.queue.together
        result = await self.scripts.delete(
            keys=[keys.search_expiries(tenant), *self.queue.script_keys(keys.RUNNING)],
            args=[
                keys.tenant_prefix(tenant),
                tenant,
                keys.CANCEL_CHANNEL if together else "",
                _UNFINISHED,
                keys.EVENTS_SUFFIX,
                keys.ACK_SUFFIX,
                *((tally.key, tally.keep_ms, tally.fields) if tally else ("", "", "")),
                *interaction_ids,
            ],
        )
        if not together:
            running = [keys.member(tenant, text(each)) for each in result[1:]]
            await self.queue.forget(*running)
            await self.queue.cancel(running)
        return int(result[0])

    async def broadcast_forget(self, tenant: str) -> None:
        """Every process drops the histories it caches for this tenant (after a delete)."""
        await self.queue.forget_tenant(tenant)


def _usage_args(record: NewRecord | None, ttl_ms: int) -> tuple[str, int, str]:
    """create.lua's usage arguments: what a record stored already ended used; nothing for one that runs."""
    if record is None or record.status not in lifecycle.FINISHED:
        return "", ttl_ms, ""
    usage = record.output.usage if record.output else None
    return amounts(usage, record.calls), ttl_ms, record.status


def _counted(tenant: str, record: NewRecord, used: str) -> None:
    config = record.config.config
    model = config.model or config.agent or ""
    usage_metrics.counted(model.removeprefix("models/"), record.status, used, tenant)


def _tags(record: NewRecord | None, previous_interaction_id: str | None) -> str:
    """create.lua's search tags of the record it stores ('' for none)."""
    if record is None:
        return ""
    return search_tags.tags_of(record.config.config, previous_interaction_id, record.config.dialect)
