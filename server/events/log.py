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

from ..errors import InvalidArgument
from ..observability import metrics
from ..protocol import lifecycle, sse
from ..protocol.events import ErrorEvent
from ..protocol.interaction import ErrorInfo
from ..protocol.records import Record
from ..protocol.replay import synthesize
from ..store import outage
from ..store.store import Store

#: how often a stream of a running interaction without a log looks for its end
_POLL_SECONDS = 0.2
#: the event ids this server makes (`[0-9]`, unlike `\d`, is ASCII only); the number is the sequence part
#: of a Redis stream entry id, an unsigned 64-bit integer
_EVENT_ID = re.compile(r"(evt|evr)_[1-9][0-9]{0,19}")
_MAX_SEQ = 2**64 - 1


class Replay(msgspec.Struct, kw_only=True):
    """A checked stream request: where to start, and whether to follow the log (else: rebuild the events
    from the stored record, once it is finished)."""

    tenant: str
    interaction_id: str
    after: int
    follow: bool
    #: nothing will come after `after`
    ended: bool = False


class EventLog:
    def __init__(self, store: Store, keepalive: float) -> None:
        self.store = store
        self.keepalive = keepalive

    async def prepare(self, tenant: str, interaction_id: str, last_event_id: str | None) -> Replay:
        """Check the request before the response starts: 400 for a `last_event_id` that is no event id (before
        anything is asked of Redis), 404 for the id, 400 for an event id this interaction does not have."""
        kind, after = sse.LOGGED, 0
        if last_event_id is not None:
            kind, after = parse_last_event_id(last_event_id)
        record = await self.store.interactions.get(tenant, interaction_id)
        has_log = await self.store.log.exists(tenant, interaction_id)
        if has_log or (record.logged and record.status in lifecycle.UNFINISHED):
            if after and (
                kind != sse.LOGGED or not await self.store.log.has_event(tenant, interaction_id, after)
            ):
                raise InvalidArgument(
                    f"Unknown or expired last_event_id {last_event_id!r}: no such event in this "
                    "interaction's log",
                    "last_event_id",
                )
            # a client that saw the terminal event and resumes after it gets an empty stream at once
            ended = record.status in lifecycle.FINISHED and after >= record.seq
            return Replay(tenant=tenant, interaction_id=interaction_id, after=after, follow=True, ended=ended)
        if after and (
            kind != sse.REBUILT or (record.status in lifecycle.FINISHED and after > len(synthesize(record)))
        ):
            raise InvalidArgument(
                f"Unknown or expired last_event_id {last_event_id!r}: this interaction's event log has "
                "expired; replay it from the start (without last_event_id)",
                "last_event_id",
            )
        return Replay(tenant=tenant, interaction_id=interaction_id, after=after, follow=False)

    async def frames(self, replay: Replay) -> AsyncIterator[bytes]:
        """The stream's frames; it always ends with a terminal event, an `error` one if Redis is lost
        (the client resumes from its last event id once Redis is back)."""
        if replay.ended:
            return
        try:
            if replay.follow:
                async for chunk in self._follow(replay):
                    yield chunk
                return
            record = await self._wait_finished(replay)
            if record is None:
                yield _gone(replay.interaction_id)
            else:
                yield b"".join(synthesize(record)[replay.after :])
        except outage.UNAVAILABLE:
            metrics.redis_failed("stream")
            yield sse.unavailable_frame()

    async def _follow(self, replay: Replay) -> AsyncIterator[bytes]:
        tenant, interaction_id, after = replay.tenant, replay.interaction_id, replay.after
        block_ms = int(self.keepalive * 1000)
        while True:
            after, frames = await self.store.log.follow(tenant, interaction_id, after, block_ms)
            if not frames:
                status = await self.store.interactions.status(tenant, interaction_id)
                if status is None or status in lifecycle.FINISHED:
                    # a finished run's end is in its log with its status (finish.lua): nothing more will
                    # come; the log gone meanwhile (deleted, expired) is said
                    if not await self.store.log.exists(tenant, interaction_id):
                        yield _gone(interaction_id)
                    return
                yield sse.KEEPALIVE
                continue
            for index, frame in enumerate(frames):
                if sse.is_terminal(frame):
                    yield b"".join(frames[: index + 1])
                    return
            yield b"".join(frames)

    async def _wait_finished(self, replay: Replay) -> Record | None:
        """A running interaction without a log (a plain foreground call): its end, read from the record."""
        while True:
            status = await self.store.interactions.status(replay.tenant, replay.interaction_id)
            if status is None:
                return None
            if status in lifecycle.FINISHED:
                return await self.store.interactions.get(replay.tenant, replay.interaction_id)
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
