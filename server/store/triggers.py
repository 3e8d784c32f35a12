"""A tenant's triggers and their executions, as Redis keeps them (keys.trigger, keys.trigger_executions).

Records only: validation, schedules and the wire shapes are server/triggers/. A trigger is one HASH
(TriggerField): its config written once as JSON, and the fields its fires, updates and executions change;
a ZSET of the tenant's ids by creation is the list and its count. Its executions are JSON values of one
HASH, listed by a ZSET of their scheduled times. Every change is one script, so that a fire, an update and
an execution's end racing each other each see the others whole.
"""

from __future__ import annotations

from typing import Any

import msgspec
from redis.asyncio import Redis

from ..protocol.codec import json_encoder
from . import keys
from .commands import oldest_first, text, typed
from .keys import TriggerField as F
from .scripts import Scripts


class TriggerConfig(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What a trigger is made with and keeps: an update changes only its name and status."""

    id: str
    create_ms: int
    schedule: str
    time_zone: str
    #: the interaction each execution creates, as the client sent it (a create's JSON body)
    interaction: msgspec.Raw
    execution_timeout_seconds: int
    #: 0: no limit
    max_consecutive_failures: int = 0


class TriggerRecord(msgspec.Struct, frozen=True, kw_only=True):
    config: TriggerConfig
    display_name: str | None
    status: str
    next_ms: int | None
    last_run_ms: int | None
    last_pause_ms: int | None
    last_resume_ms: int | None
    update_ms: int
    previous_interaction_id: str | None
    fails: int
    running: str | None


class ExecutionRecord(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One execution, as trigger_fire.lua writes it (and trigger_started / trigger_settle change it)."""

    id: str
    scheduled: int
    status: str
    start: int | None = None
    end: int | None = None
    error: str | None = None
    #: its interaction, once created
    ix: str | None = None
    #: the interaction it continues (the trigger's last one when it started)
    prev: str | None = None


#: what a fire came to (trigger_fire.lua)
GONE, STALE, INACTIVE, SKIPPED, FIRED = "gone", "stale", "inactive", "skipped", "fired"

_config = msgspec.json.Decoder(TriggerConfig).decode
_execution = msgspec.json.Decoder(ExecutionRecord).decode


def marker(trigger_id: str, execution_id: str) -> str:
    """What an interaction an execution made holds in its Field.TRIGGER (neither id has a space)."""
    return f"{trigger_id} {execution_id}"


def _int(values: dict[bytes, bytes], field: str) -> int | None:
    raw = values.get(field.encode())
    return None if raw is None else int(raw)


def _str(values: dict[bytes, bytes], field: str) -> str | None:
    raw = values.get(field.encode())
    return None if raw is None else raw.decode()


def record_of(values: dict[bytes, bytes]) -> TriggerRecord | None:
    if F.CONFIG.encode() not in values:
        return None
    config = _config(values[F.CONFIG.encode()])
    return TriggerRecord(
        config=config,
        display_name=_str(values, F.NAME),
        status=_str(values, F.STATUS) or "active",
        next_ms=_int(values, F.NEXT),
        last_run_ms=_int(values, F.LAST_RUN),
        last_pause_ms=_int(values, F.LAST_PAUSE),
        last_resume_ms=_int(values, F.LAST_RESUME),
        update_ms=_int(values, F.UPDATED) or config.create_ms,
        previous_interaction_id=_str(values, F.PREV),
        fails=_int(values, F.FAILS) or 0,
        running=_str(values, F.RUNNING),
    )


class FireOutcome(msgspec.Struct, frozen=True):
    what: str
    execution: ExecutionRecord | None


class Triggers:
    def __init__(self, redis: Redis, scripts: Scripts) -> None:
        self.redis = typed(redis)
        self.scripts = scripts

    async def get(self, tenant: str, trigger_id: str) -> TriggerRecord | None:
        return record_of(await self.redis.hgetall(keys.trigger(tenant, trigger_id)))

    async def page(self, tenant: str, after: tuple[int, str] | None, count: int) -> list[tuple[int, str]]:
        """Up to `count` (creation ms, id) of the tenant's triggers, oldest first, after the one given."""
        return await oldest_first(self.redis, keys.triggers(tenant), after, count)

    async def create(
        self, tenant: str, config: TriggerConfig, display_name: str | None, next_ms: int, limit: int
    ) -> bool:
        """Store a new trigger, active; False when the tenant has `limit` already."""
        done = await self.scripts.trigger_create(
            keys=[keys.triggers(tenant), keys.trigger(tenant, config.id)],
            args=[
                config.id,
                config.create_ms,
                json_encoder.encode(config),
                display_name or "",
                next_ms,
                limit,
            ],
        )
        return bool(int(done))

    async def update(
        self,
        tenant: str,
        trigger_id: str,
        now: int,
        name: tuple[str | None] | None,
        status: str,
        next_ms: int,
    ) -> bool:
        """Set its name (`name`: (the new name,), or None to keep it) and its status ('' to keep it); a
        resume sets `next_ms`. False when there is no such trigger."""
        args: list[Any] = [now, "1" if name else "0", (name[0] or "") if name else "", status, next_ms]
        done = await self.scripts.trigger_update(keys=[keys.trigger(tenant, trigger_id)], args=args)
        return bool(int(done))

    async def delete(self, tenant: str, trigger_id: str) -> bool:
        existed = await self.scripts.trigger_delete(
            keys=[
                keys.trigger(tenant, trigger_id),
                keys.trigger_executions(tenant, trigger_id),
                keys.trigger_execution_ids(tenant, trigger_id),
                keys.triggers(tenant),
            ],
            args=[trigger_id],
        )
        return bool(int(existed))

    async def fire(
        self, tenant: str, trigger_id: str, now: int, scheduled_ms: int, *, manual: bool = False, **how: Any
    ) -> FireOutcome:
        """trigger_fire.lua: `how` has execution_id, run (bool), next_ms, kept, missed_error, missed."""
        args = [
            now,
            "manual" if manual else "scheduled",
            scheduled_ms,
            how["execution_id"],
            "1" if how["run"] else "0",
            how.get("next_ms", 0),
            how["kept"],
            how.get("missed_error", ""),
            *how.get("missed", ()),
        ]
        what, raw = await self.scripts.trigger_fire(keys=self._keys(tenant, trigger_id, ids=True), args=args)
        return FireOutcome(text(what), _execution(raw) if raw else None)

    async def started(self, tenant: str, trigger_id: str, execution_id: str, interaction_id: str) -> bool:
        done = await self.scripts.trigger_started(
            keys=self._keys(tenant, trigger_id), args=[execution_id, interaction_id]
        )
        return bool(int(done))

    async def settle(
        self, tenant: str, trigger_id: str, execution_id: str, status: str, error: str, **how: Any
    ) -> bool:
        """trigger_settle.lua: `how` has now, failed (bool), limit, and optionally interaction_id (the
        interaction whose end settles it)."""
        args = [execution_id, status, error, how["now"], "1" if how["failed"] else "0", how["limit"]]
        args.append(how.get("interaction_id", ""))
        done = await self.scripts.trigger_settle(keys=self._keys(tenant, trigger_id), args=args)
        return bool(int(done))

    async def made_by(self, tenant: str, interaction_id: str) -> tuple[str, str, str] | None:
        """(trigger id, execution id, the interaction's status) of an interaction a trigger's execution
        made (its hash's Field.TRIGGER); None for any other, or one gone."""
        made, status = await self.redis.hmget(
            keys.interaction(tenant, interaction_id), [keys.Field.TRIGGER, keys.Field.STATUS]
        )
        if made is None or status is None:
            return None
        trigger_id, _, execution_id = text(made).partition(" ")
        return trigger_id, execution_id, text(status)

    def _keys(self, tenant: str, trigger_id: str, *, ids: bool = False) -> list[str]:
        names = [keys.trigger(tenant, trigger_id), keys.trigger_executions(tenant, trigger_id)]
        return [*names, keys.trigger_execution_ids(tenant, trigger_id)] if ids else names

    async def index(self, tenant: str, trigger_id: str, next_ms: int) -> None:
        """The sweep looks at the trigger again once `next_ms` is long past (keys.TRIGGER_TIMES)."""
        await self.redis.zadd(keys.TRIGGER_TIMES, {keys.member(tenant, trigger_id): next_ms})

    async def unindex(self, tenant: str, trigger_id: str) -> None:
        await self.redis.zrem(keys.TRIGGER_TIMES, keys.member(tenant, trigger_id))

    async def overdue(self, before_ms: int, count: int) -> list[tuple[str, str]]:
        """Up to `count` (tenant, trigger id) of triggers indexed at a time before `before_ms`: one command
        when there is none (the sweep's idle cost)."""
        found: list[Any] = await self.redis.zrangebyscore(
            keys.TRIGGER_TIMES, "-inf", f"({before_ms}", start=0, num=count
        )
        return [keys.split_member(text(each)) for each in found]

    async def execution(self, tenant: str, trigger_id: str, execution_id: str) -> ExecutionRecord | None:
        raw = await self.redis.hget(keys.trigger_executions(tenant, trigger_id), execution_id)
        return None if raw is None else _execution(raw)

    async def executions(
        self, tenant: str, trigger_id: str, after: tuple[int, str] | None, count: int
    ) -> list[ExecutionRecord]:
        """Up to `count` of its executions, oldest first (by scheduled time), after the one given."""
        found = await oldest_first(self.redis, keys.trigger_execution_ids(tenant, trigger_id), after, count)
        if not found:
            return []
        raws = await self.redis.hmget(keys.trigger_executions(tenant, trigger_id), [i for _, i in found])
        return [_execution(raw) for raw in raws if raw is not None]
