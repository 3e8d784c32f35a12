"""Reading an interaction's events: replay from the start or after `last_event_id`, then follow live.

Any web process can serve any interaction's stream: the log is a Redis Stream whose entry ids are
`0-<seq>` for event `evt_<seq>`, so resuming is one XREAD after a known id. A finished interaction whose log
has expired, or that never had one (a foreground call without streaming), is replayed from its record.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import msgspec
from redis.asyncio import Redis

from ..protocol import status as st
from ..protocol.base import dec_hook, enc_hook
from ..protocol.codec import InvalidArgument, json_encoder
from ..protocol.content import TextContent
from ..protocol.deltas import ArgumentsDelta, Delta, TextDelta, ThoughtSignatureDelta, ThoughtSummaryDelta
from ..protocol.events import (
    ErrorEvent,
    Event,
    InteractionCompleted,
    InteractionCreated,
    InteractionStatusUpdate,
    StepDelta,
    StepStart,
    StepStop,
)
from ..protocol.interaction import ErrorInfo, Interaction
from ..protocol.steps import FunctionCallStep, ModelOutputStep, Step, ThoughtStep
from ..runner import render
from ..store import keys, outage
from ..store.records import Record
from ..store.repository import Repository
from . import sse

#: how often a stream of a running interaction without a log looks for its end
_POLL_SECONDS = 0.2
#: the event ids this server makes (`[0-9]`, unlike `\d`, is ASCII only); the number is the sequence part
#: of a Redis stream entry id, an unsigned 64-bit integer
_EVENT_ID = re.compile(r"(evt|evr)_[1-9][0-9]{0,19}")
_MAX_SEQ = 2**64 - 1


class Replay(msgspec.Struct, kw_only=True):
    """A checked stream request: where to start and how to read."""

    tenant: str
    interaction_id: str
    after: int
    #: "follow" the log, or "record": rebuild the events from the stored record (once it is finished)
    mode: str


class EventLog:
    def __init__(self, redis: Redis, blocking_redis: Redis, repository: Repository, keepalive: float) -> None:
        self.redis = redis
        self.blocking = blocking_redis
        self.repository = repository
        self.keepalive = keepalive

    async def prepare(self, tenant: str, interaction_id: str, last_event_id: str | None) -> Replay:
        """Check the request before the response starts: 400 for a `last_event_id` that is no event id (before
        anything is asked of Redis), 404 for the id, 400 for an event id this interaction does not have."""
        kind, after = sse.LOGGED, 0
        if last_event_id is not None:
            kind, after = parse_last_event_id(last_event_id)
        record = await self.repository.get(tenant, interaction_id)
        key = keys.events(tenant, interaction_id)
        has_log = bool(await self.redis.exists(key))
        if has_log or (record.logged and record.status in st.RUNNING):
            if after and (
                kind != sse.LOGGED or not await self.redis.xrange(key, f"0-{after}", f"0-{after}", count=1)
            ):
                raise InvalidArgument(
                    f"Unknown or expired last_event_id {last_event_id!r}: no such event in this "
                    "interaction's log",
                    "last_event_id",
                )
            return Replay(tenant=tenant, interaction_id=interaction_id, after=after, mode="follow")
        if after and (
            kind != sse.REBUILT or (record.status in st.FINISHED and after > len(synthesize(record)))
        ):
            raise InvalidArgument(
                f"Unknown or expired last_event_id {last_event_id!r}: this interaction's event log has "
                "expired; replay it from the start (without last_event_id)",
                "last_event_id",
            )
        return Replay(tenant=tenant, interaction_id=interaction_id, after=after, mode="record")

    async def frames(self, replay: Replay) -> AsyncIterator[bytes]:
        """The stream's frames; it always ends with a terminal event, an `error` one if Redis is lost
        (the client resumes from its last event id once Redis is back)."""
        try:
            if replay.mode == "follow":
                async for chunk in self._follow(replay):
                    yield chunk
                return
            record = await self._wait_finished(replay)
            if record is None:
                yield _gone(replay.interaction_id)
            else:
                yield b"".join(synthesize(record)[replay.after :])
        except outage.UNAVAILABLE:
            yield sse.unavailable_frame()

    async def _follow(self, replay: Replay) -> AsyncIterator[bytes]:
        key = keys.events(replay.tenant, replay.interaction_id)
        last = f"0-{replay.after}"
        block_ms = int(self.keepalive * 1000)
        while True:
            response = await self.blocking.xread({key: last}, count=1000, block=block_ms)
            if not response:
                status = await self.repository.status(replay.tenant, replay.interaction_id)
                if status is None or (status in st.FINISHED and not await self.redis.exists(key)):
                    yield _gone(replay.interaction_id)
                    return
                yield sse.KEEPALIVE
                continue
            frames: list[bytes] = []
            for _key, entries in response:
                for entry_id, fields in entries:
                    last = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
                    frame = fields[b"e"]
                    frames.append(frame)
                    if sse.is_terminal(frame):
                        yield b"".join(frames)
                        return
            yield b"".join(frames)

    async def _wait_finished(self, replay: Replay) -> Record | None:
        """A running interaction without a log (a plain foreground call): its end, read from the record."""
        while True:
            status = await self.repository.status(replay.tenant, replay.interaction_id)
            if status is None:
                return None
            if status in st.FINISHED:
                return await self.repository.get(replay.tenant, replay.interaction_id)
            await asyncio.sleep(_POLL_SECONDS)


def parse_last_event_id(value: str) -> tuple[str, int]:
    """(kind, sequence number) of an event id as this server makes them, or a 400 naming the field.

    Only that exact form passes (ASCII digits, no sign, no leading zero, a number that fits a Redis stream
    entry id): `int()` alone would take "٣" or "+3", and a number past 64 bits makes Redis refuse the
    entry id, which would be a 500."""
    parsed = sse.parse_event_id(value) if _EVENT_ID.fullmatch(value) else None
    if parsed is None or parsed[1] > _MAX_SEQ:
        shown = value if len(value) <= 40 else value[:40] + "..."
        raise InvalidArgument(
            f"{shown!r} is not an event id of this server (evt_<n> or evr_<n>, n from 1 to {_MAX_SEQ})",
            "last_event_id",
        )
    return parsed


def _gone(interaction_id: str) -> bytes:
    event = ErrorEvent(error=ErrorInfo(code="not_found", message=f"Interaction {interaction_id!r} is gone"))
    return sse.frame(event)


def synthesize(record: Record) -> list[bytes]:
    """The events of a finished interaction, rebuilt from its record (numbered evr_1, evr_2, ...)."""
    interaction = render.from_record(record, full_timeline=False)
    events: list[Event] = [
        InteractionCreated(
            interaction=Interaction(
                id=record.id,
                object="interaction",
                status=st.IN_PROGRESS,
                model=interaction.model,
                agent=interaction.agent,
                created=record.created,
                updated=record.created,
            )
        ),
        InteractionStatusUpdate(interaction_id=record.id, status=st.IN_PROGRESS),
    ]
    for index, step in enumerate(interaction.steps or []):
        events += _step_events(index, step)
    events.append(
        InteractionStatusUpdate(interaction_id=record.id, status=record.status, usage=interaction.usage)
    )
    if record.status == st.FAILED:
        errors = interaction.errors or [ErrorInfo(code="failed", message="The interaction failed")]
        events.append(ErrorEvent(error=errors[0]))
    else:
        events.append(InteractionCompleted(interaction=interaction))
    frames = []
    for seq, event in enumerate(events, start=1):
        event.event_id = sse.event_id(seq, sse.REBUILT)
        frames.append(sse.frame(event))
    return frames


def _step_events(index: int, step: Step) -> list[Event]:
    deltas: list[Delta] = []
    skeleton: Step = step
    if isinstance(step, ModelOutputStep):
        skeleton = ModelOutputStep(error=step.error)
        for item in step.content:
            if isinstance(item, TextContent):
                deltas.append(TextDelta(text=item.text))
            else:
                # a media item and its delta share `type` and fields
                deltas.append(
                    msgspec.convert(msgspec.to_builtins(item, enc_hook=enc_hook), Delta, dec_hook=dec_hook)
                )
    elif isinstance(step, ThoughtStep):
        skeleton = ThoughtStep()
        for item in step.summary or []:
            deltas.append(ThoughtSummaryDelta(content=item))
        if step.signature:
            deltas.append(ThoughtSignatureDelta(signature=step.signature))
    elif isinstance(step, FunctionCallStep):
        skeleton = FunctionCallStep(id=step.id, name=step.name, arguments={})
        deltas.append(ArgumentsDelta(arguments=json_encoder.encode(step.arguments).decode()))
    return [
        StepStart(index=index, step=skeleton),
        *(StepDelta(index=index, delta=delta) for delta in deltas),
        StepStop(index=index),
    ]
