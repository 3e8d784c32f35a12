"""The sink of a run whose events are logged (runner/sinks.py says which runs those are)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from ..errors import Fenced, NotFound, StatusChanged, StoreConflict
from ..events.writer import LogEntry, LogWriter, OnRefused
from ..observability import metrics
from ..protocol import lifecycle, sse, views
from ..protocol import status as st
from ..protocol.events import ErrorEvent, Event
from ..protocol.interaction import ErrorInfo, Interaction
from ..protocol.lifecycle import Event as Move
from ..store.outage import UNAVAILABLE
from ..store.store import Store
from . import handle as reasons
from .handle import RunHandle
from .histories import Histories
from .retried import through_outage
from .sinks import END, Listener, Numbered, RunEnd, RunResult, final_view, terminal_events
from .spec import RunSpec

log = logging.getLogger(__name__)


class LogSink(Numbered):
    """A run whose events are logged. Its client (if any) gets each frame once it is in the log (the
    writer relays it), so what a client saw is what the log, and so any follower, resume or settled record,
    holds. The writer renews its lease and stops it (through `handle`) when a cancel, a takeover or an
    unwritable log refuses its writes."""

    def __init__(
        self,
        spec: RunSpec,
        store: Store,
        writer: LogWriter,
        histories: Histories,
        handle: RunHandle,
        *,
        listener: Listener | None,
        generation: int,
    ) -> None:
        super().__init__(spec, framed=True)
        assert spec.tenant and spec.interaction_id
        self.tenant, self.interaction_id = spec.tenant, spec.interaction_id
        self.store = store
        self.writer = writer
        self.histories = histories
        self.listener = listener
        self.generation = generation
        self.entry: LogEntry = writer.register(
            spec.tenant, spec.interaction_id, spec.fence, _stopper(handle), listener
        )

    def emit(self, event: Event) -> None:
        seq, frame = self.number(event)
        self.writer.add(self.entry, seq, frame)

    async def remote_started(self, remote_id: str) -> None:
        """In the record before the run reads on (refused, it is stopped: a cancel or a takeover came)."""
        await self.store.runs.set_remote(self.tenant, self.interaction_id, self.spec.fence, remote_id)

    async def release(self) -> None:
        await self._take_pending()

    async def _take_pending(self) -> list[tuple[int, bytes]]:
        """Take the run off the writer; its frames not written yet go with the settle."""
        if self.entry.inflight is None:
            return self.writer.release_now(self.entry)
        return await asyncio.shield(self.writer.release(self.entry))

    async def settle(self, end: RunEnd) -> RunResult:
        pending = await self._take_pending()
        start_seq, event, status = self.seq, end.event, end.status
        while True:
            final = final_view(self.spec, status, end.output)
            terminal = [self.number(e) for e in terminal_events(final, end.error)]
            try:
                await self._finish(event, status, final, end, [*pending, *terminal])
                break
            except StatusChanged as exc:
                if exc.current != lifecycle.CANCELLING or event is Move.SAVE_CANCELLED:
                    return await self._lost(final, end)
                # a cancel won the race: what was made until now is the cancelled interaction's output
                event, status, self.seq = Move.SAVE_CANCELLED, st.CANCELLED, start_seq
            except (Fenced, NotFound):
                return await self._lost(final, end)
            except UNAVAILABLE as exc:
                log.warning(
                    "interaction %s could not be settled (Redis: %s: %s); the reaper ends it from its log",
                    self.interaction_id,
                    type(exc).__name__,
                    exc,
                )
                return await self.abandon(reasons.UNAVAILABLE)
        history = (*self.spec.request.history, *end.output.steps)
        self.histories.put(self.tenant, self.interaction_id, history, self.generation)
        if self.listener is not None:
            # the frames not relayed yet went into the log with the settle
            for _seq, frame in [*pending, *terminal]:
                self.listener.put_nowait(frame)
            self.listener.put_nowait(END)
        return RunResult(interaction=final, error=end.error, produced=end.produced)

    async def _finish(
        self, event: Move, status: str, final: Interaction, end: RunEnd, events: list[tuple[int, bytes]]
    ) -> None:
        """finish.lua, through an outage (runner/retried.py): a later try that finds the status it
        writes, under this run's fence, finds its own earlier try applied."""

        async def write() -> None:
            await self.store.runs.finish(
                self.tenant,
                self.interaction_id,
                event=event,
                fence=self.spec.fence,
                output=end.output,
                updated=final.updated or views.timestamp(),
                events=events,
                calls=self.spec.calls.n,
            )

        await through_outage(
            write,
            seconds=2 * self.store.runs.lease_ms / 1000,
            landed=lambda exc: isinstance(exc, StatusChanged) and exc.current == status,
            outage=self.writer.outage,
            what=f"the end of interaction {self.interaction_id}",
        )

    async def _lost(self, final: Interaction, end: RunEnd) -> RunResult:
        await self.end_from_log()
        return RunResult(interaction=final, error=end.error, produced=end.produced, fenced=True)

    async def abandon(self, reason: str) -> RunResult:
        """Stop without settling: another process owns the interaction now (its end is in the log), or
        nothing can be written (the reaper settles it from its log once Redis is back)."""
        await self._take_pending()
        if reason == reasons.FENCED:
            await self.end_from_log()
        elif self.listener is not None:
            metrics.redis_failed("stream")
            self.listener.put_nowait(sse.unavailable_frame())
            self.listener.put_nowait(END)
        snapshot = views.snapshot(self.spec.interaction_id, self.spec.config, self.spec.created)
        return RunResult(interaction=snapshot, fenced=True)

    async def end_from_log(self) -> None:
        """End the stream of a run that lost the interaction (its lease ran out and it was failed, or it
        was taken over): the client gets the rest of the log, which ends as the record does."""
        if self.listener is None:
            return
        frames: list[bytes] = []
        with contextlib.suppress(*UNAVAILABLE):
            frames = await self.store.log.frames(self.tenant, self.interaction_id, after=self.entry.committed)
        for frame in frames:
            self.listener.put_nowait(frame)
        if not frames or not sse.is_terminal(frames[-1]):
            info = ErrorInfo(code="run_lost", message="This run lost the interaction to another process")
            self.listener.put_nowait(sse.frame(ErrorEvent(error=info)))
        self.listener.put_nowait(END)


def _stopper(handle: RunHandle) -> OnRefused:
    """What stops the run when the writer's write is refused (None: the log is unwritable)."""

    def refused(conflict: StoreConflict | None) -> None:
        if conflict is None:
            handle.stop(reasons.UNAVAILABLE)
        elif isinstance(conflict, Fenced):
            handle.stop(reasons.FENCED)
        else:
            handle.stop(reasons.CANCELLED)

    return refused
