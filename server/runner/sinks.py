"""Where a run's events and its end go, chosen once by the create plan (runner/plan.py).

    NullSink     store=false: frames to the caller's stream if it has one; nothing is stored
    RecordSink   a plain foreground call: nothing is framed; the record is stored once, finished
    LogSink      streamed or idempotent foreground calls and background jobs: the frames go to the event
                 log (and to the caller once logged); the end is one compare-and-set (runs.finish)

The runner (runner/run.py) only emits events and asks the sink to settle; what is stored, when and how a
race with a cancel or a takeover is resolved is the sink's.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final, Protocol

import msgspec

from ..errors import Fenced, NotFound, StatusChanged, StoreConflict
from ..events.writer import LogEntry, LogWriter, OnRefused
from ..protocol import lifecycle, sse, views
from ..protocol import status as st
from ..protocol.events import ErrorEvent, Event, InteractionCompleted, InteractionStatusUpdate
from ..protocol.interaction import ErrorInfo, Interaction
from ..protocol.lifecycle import Event as Move
from ..protocol.records import Output
from ..protocol.steps import Step
from ..store.interactions import Chain, Interactions, NewRecord
from ..store.outage import UNAVAILABLE
from ..store.store import Store
from ..upstream.base import UpstreamError
from . import handle as reasons
from .handle import RunHandle
from .histories import Histories
from .spec import RunSpec

#: what a foreground stream's queue carries: a frame, or None when the run is over
Listener = asyncio.Queue[bytes | None]
END: Final = None


class RunEnd(msgspec.Struct, kw_only=True):
    """How a run ended: the lifecycle event that settles it and what it made."""

    event: Move
    status: str
    output: Output
    error: UpstreamError | None = None
    #: it produced output before it ended
    produced: bool = False


class RunResult(msgspec.Struct, kw_only=True):
    interaction: Interaction
    #: the upstream failure that ended the run, if one did
    error: UpstreamError | None = None
    #: produced any output before it ended
    produced: bool = False
    #: another runner owns the interaction now; nothing was written
    fenced: bool = False


class Sink(Protocol):
    listener: Listener | None

    def emit(self, event: Event) -> None: ...
    async def release(self) -> None: ...
    async def settle(self, end: RunEnd) -> RunResult: ...
    async def abandon(self, reason: str) -> RunResult: ...


def terminal_events(final: Interaction, error: UpstreamError | None) -> list[Event]:
    update = InteractionStatusUpdate(interaction_id=final.id or "", status=final.status, usage=final.usage)
    if final.status == st.FAILED:
        info = (final.errors or [ErrorInfo(code="failed", message="The interaction failed")])[0]
        return [update, ErrorEvent(error=info)]
    return [update, InteractionCompleted(interaction=final)]


def final_view(spec: RunSpec, status: str, output: Output) -> Interaction:
    return views.interaction(
        interaction_id=spec.interaction_id,
        status=status,
        config=spec.config,
        created=spec.created,
        updated=views.timestamp(),
        previous_interaction_id=spec.previous_interaction_id,
        steps=output.steps,
        usage=output.usage,
        errors=output.errors,
    )


class _Numbered:
    """Numbers a run's events (and frames them, when someone will read the frames)."""

    def __init__(self, spec: RunSpec, framed: bool) -> None:
        self.spec = spec
        self.seq = spec.seq
        self.framed = framed

    def number(self, event: Event) -> tuple[int, bytes]:
        self.seq += 1
        if not self.framed:
            return self.seq, b""
        event.event_id = sse.event_id(self.seq)
        return self.seq, sse.frame(event)


class NullSink(_Numbered):
    """store=false: the caller's stream (if any) gets each frame at once."""

    def __init__(self, spec: RunSpec, listener: Listener | None) -> None:
        super().__init__(spec, framed=listener is not None)
        self.listener: Listener | None = listener

    def emit(self, event: Event) -> None:
        _seq, frame = self.number(event)
        if self.listener is not None:
            self.listener.put_nowait(frame)

    async def release(self) -> None:
        return None

    async def settle(self, end: RunEnd) -> RunResult:
        final = final_view(self.spec, end.status, end.output)
        for event in terminal_events(final, end.error):
            self.emit(event)
        if self.listener is not None:
            self.listener.put_nowait(END)
        return RunResult(interaction=final, error=end.error, produced=end.produced)

    async def abandon(self, reason: str) -> RunResult:
        raise AssertionError(f"a run that stores nothing cannot be stopped as {reason}")


class RecordSink(_Numbered):
    """A plain foreground call: its id is known to nobody until it is answered, so it is stored once,
    finished, after `check_chain` checked its chain before it ran."""

    def __init__(
        self,
        spec: RunSpec,
        interactions: Interactions,
        histories: Histories,
        *,
        chain: Chain,
        input_steps: list[Step],
        generation: int,
    ) -> None:
        super().__init__(spec, framed=False)
        self.listener: Listener | None = None
        self.interactions = interactions
        self.histories = histories
        self.chain = chain
        self.input_steps = input_steps
        self.generation = generation

    def emit(self, event: Event) -> None:
        self.number(event)

    async def release(self) -> None:
        return None

    async def settle(self, end: RunEnd) -> RunResult:
        spec = self.spec
        final = final_view(spec, end.status, end.output)
        for event in terminal_events(final, end.error):
            self.number(event)
        if end.error is not None and not end.produced:
            # its caller gets an HTTP error and no id: there is nothing anyone could read back
            return RunResult(interaction=final, error=end.error, produced=False)
        assert spec.tenant and spec.interaction_id
        record = NewRecord(
            status=end.status,
            created=spec.created,
            updated=final.updated,
            seq=self.seq,
            config=spec.config,
            input_steps=self.input_steps,
            output=end.output,
        )
        await self.interactions.store_finished(
            spec.tenant,
            spec.interaction_id,
            record,
            previous_interaction_id=spec.previous_interaction_id,
            chain=self.chain,
        )
        # what the next turn continues from: this one's whole conversation
        history = (*spec.request.history, *end.output.steps)
        self.histories.put(spec.tenant, spec.interaction_id, history, self.generation)
        return RunResult(interaction=final, error=end.error, produced=end.produced)

    async def abandon(self, reason: str) -> RunResult:
        raise AssertionError(f"a run nothing can address cannot be stopped as {reason}")


class LogSink(_Numbered):
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
                await self.store.runs.finish(
                    self.tenant,
                    self.interaction_id,
                    event=event,
                    fence=self.spec.fence,
                    output=end.output,
                    updated=final.updated or views.timestamp(),
                    events=[*pending, *terminal],
                )
                break
            except StatusChanged as exc:
                if exc.current != lifecycle.CANCELLING or event is Move.SAVE_CANCELLED:
                    return await self._lost(final, end)
                # a cancel won the race: what was made until now is the cancelled interaction's output
                event, status, self.seq = Move.SAVE_CANCELLED, st.CANCELLED, start_seq
            except (Fenced, NotFound):
                return await self._lost(final, end)
        history = (*self.spec.request.history, *end.output.steps)
        self.histories.put(self.tenant, self.interaction_id, history, self.generation)
        if self.listener is not None:
            # the frames not relayed yet went into the log with the settle
            for _seq, frame in [*pending, *terminal]:
                self.listener.put_nowait(frame)
            self.listener.put_nowait(END)
        return RunResult(interaction=final, error=end.error, produced=end.produced)

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
