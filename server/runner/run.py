"""Run one interaction: call the upstream, number and log the events, settle the final state.

The same code serves a foreground request in a web process and a background job in a worker. While it
runs, events go to the caller's stream at once (if there is one) and to the event log in batches; the
batch write also renews the lease and reads the status, so a cancel whose signal was lost is still seen.
Whatever ends the run (the model, a cancel, an upstream failure), the output so far is settled with one
compare-and-set together with the terminal events.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from typing import Final

import msgspec

from ..events import sse
from ..events.writer import UNWRITABLE, LogEntry, LogWriter
from ..protocol import status as st
from ..protocol.events import (
    ErrorEvent,
    Event,
    InteractionCompleted,
    InteractionCreated,
    InteractionStatusUpdate,
)
from ..protocol.interaction import ErrorInfo, Interaction
from ..protocol.steps import Step
from ..settings import UpstreamRetrySettings
from ..store.outage import UNAVAILABLE
from ..store.records import Output, StoredConfig
from ..store.repository import NewRecord, Repository
from ..upstream.base import (
    Backend,
    StepDelta,
    StepEnded,
    StepStarted,
    UpstreamError,
    UpstreamEvent,
    UpstreamRequest,
    backoff_delay,
)
from . import handle as reasons
from . import render
from .handle import RunHandle
from .histories import Histories
from .turn import TurnBuilder

#: what a foreground stream's queue carries: a frame, or None when the run is over
Listener = asyncio.Queue[bytes | None]
END: Final = None
WORKER_STOPPED = (
    "The worker running this interaction was stopped before it finished; the output made until then is kept"
)
#: the longest `Retry-After` a background run waits for before its next attempt
_MAX_RETRY_AFTER_SECONDS: Final = 60.0


class RunSpec(msgspec.Struct, kw_only=True):
    """Everything one run needs. `tenant`/`interaction_id` are None for `store=false`."""

    tenant: str | None
    interaction_id: str | None
    fence: int = 0
    seq: int = 0
    logged: bool = False
    background: bool = False
    #: stored only when it ends (a foreground call whose id nobody knows yet): no lease, no log
    deferred: bool = False
    #: for a deferred record: the earliest expiry in its chain and its depth, from the check at create
    chain_expiry: str = ""
    depth: int = 1
    #: the tenant's history generation when the history was read (server/runner/histories.py)
    generation: int | None = None
    #: emit `interaction.created` first (a new run, not a re-run of a lost one)
    announce: bool = True
    created: str
    previous_interaction_id: str | None = None
    config: StoredConfig
    #: this turn's input (also the end of `request.history`), for a deferred record
    input_steps: list[Step] = []
    request: UpstreamRequest
    backend: Backend


class RunResult(msgspec.Struct, kw_only=True):
    interaction: Interaction
    #: the upstream failure that ended the run, if one did
    error: UpstreamError | None = None
    #: produced any output before it ended
    produced: bool = False
    #: another runner owns the interaction now; nothing was written
    fenced: bool = False


class _State:
    __slots__ = ("direct", "entry", "framed", "listener", "seq", "writer")

    def __init__(
        self, spec: RunSpec, listener: Listener | None, writer: LogWriter | None, entry: LogEntry | None
    ):
        self.listener = listener
        self.seq = spec.seq
        # the log's writer, for a run whose events are logged
        self.writer = writer if spec.logged else None
        self.entry = entry
        # a logged run's client gets each frame once it is in the log (the writer relays it), so that
        # what a client saw is what the log, and so any follower, resume or settled record, holds; an
        # unlogged run's client gets it at once
        self.direct = listener if entry is None else None
        # a run nobody streams and nothing logs only counts its events
        self.framed = listener is not None or self.writer is not None

    def number(self, event: Event) -> tuple[int, bytes]:
        self.seq += 1
        if not self.framed:
            return self.seq, b""
        event.event_id = sse.event_id(self.seq)
        return self.seq, sse.frame(event)

    def emit(self, event: Event) -> None:
        seq, frame = self.number(event)
        if self.direct is not None:
            self.direct.put_nowait(frame)
        if self.writer is not None and self.entry is not None:
            self.writer.add(self.entry, seq, frame)


class Runner:
    def __init__(
        self,
        repository: Repository | None,
        writer: LogWriter | None,
        retry: UpstreamRetrySettings,
        histories: Histories | None,
    ) -> None:
        self.repository = repository
        self.writer = writer
        self.retry = retry
        self.histories = histories

    async def run(self, spec: RunSpec, handle: RunHandle, listener: Listener | None = None) -> RunResult:
        """Run to the end. A cancellation that did not come through `handle.stop` (a worker shutting
        down) propagates, with nothing settled: the caller hands the run back to the queue."""
        turn = TurnBuilder()
        stored = spec.interaction_id is not None and self.repository is not None
        entry = self._register(spec, handle, listener) if stored and not spec.deferred else None
        state = _State(spec, listener, self.writer, entry)
        if spec.announce:
            state.emit(InteractionCreated(interaction=self._snapshot(spec, st.IN_PROGRESS)))
        state.emit(InteractionStatusUpdate(interaction_id=spec.interaction_id or "", status=st.IN_PROGRESS))
        error: UpstreamError | None = None
        produced = False
        try:
            try:
                async with contextlib.aclosing(self._upstream(spec)) as events:
                    async for event in events:
                        produced = produced or _is_output(event)
                        for api_event in turn.feed(event):
                            state.emit(api_event)
                status = turn.final_status()
            except asyncio.CancelledError:
                if handle.reason is None or (handle.reason == reasons.SHUTDOWN and not produced):
                    raise
                if handle.reason in (reasons.FENCED, reasons.UNAVAILABLE):
                    return await self._abandon(spec, state, handle.reason)
                status = st.FAILED if handle.reason == reasons.SHUTDOWN else st.CANCELLED
            except UpstreamError as exc:
                error = exc
                status = st.FAILED
        except BaseException:
            await self._release(state)
            raise
        handle.settling = True
        for api_event in turn.close_step():
            state.emit(api_event)
        errors = [ErrorInfo(code=_error_code(error), message=str(error))] if error else None
        if handle.reason == reasons.SHUTDOWN:
            errors = [ErrorInfo(code="worker_stopped", message=WORKER_STOPPED)]
        if turn.error is not None:
            errors = [*(errors or []), turn.error]
        output = Output(steps=turn.steps, usage=turn.usage, errors=errors)
        if spec.deferred and error is not None and not produced:
            # its caller gets an HTTP error and no id: there is nothing anyone could read back
            stored = False
        return await self._settle(spec, state, handle, status, output, error, produced, stored)

    def _register(self, spec: RunSpec, handle: RunHandle, listener: Listener | None) -> LogEntry | None:
        """Hand a stored run to the writer, which renews its lease and reports a cancel, a takeover or a
        log it cannot write."""
        if self.writer is None or not spec.tenant or not spec.interaction_id:
            return None

        def refused(outcome: str) -> None:
            reason = {"fenced": reasons.FENCED, UNWRITABLE: reasons.UNAVAILABLE}.get(outcome)
            handle.stop(reason or reasons.CANCELLED)

        return self.writer.register(
            spec.tenant, spec.interaction_id, spec.fence, refused, listener if spec.logged else None
        )

    async def _abandon(self, spec: RunSpec, state: _State, reason: str) -> RunResult:
        """Stop without settling: another process owns the interaction now (its end is in the log), or
        nothing can be written (the reaper settles it from its log once Redis is back)."""
        await self._release(state)
        if reason == reasons.FENCED:
            await self._end_from_log(spec, state)
        elif state.listener is not None:
            state.listener.put_nowait(sse.unavailable_frame())
            state.listener.put_nowait(END)
        return RunResult(interaction=self._snapshot(spec, st.IN_PROGRESS), fenced=True)

    # -- upstream --------------------------------------------------------------------------------------

    async def _upstream(self, spec: RunSpec) -> AsyncGenerator[UpstreamEvent, None]:
        """The backend's events; a background run retries a failure that came before any output."""
        attempt = 0
        while True:
            produced = False
            try:
                async with contextlib.aclosing(spec.backend.stream(spec.request)) as events:
                    async for event in events:
                        produced = produced or _is_output(event)
                        yield event
                return
            except UpstreamError as exc:
                attempt += 1
                if produced or not spec.background or not exc.retryable or attempt >= self.retry.attempts:
                    raise
                if exc.retry_after is not None:
                    delay = min(exc.retry_after, _MAX_RETRY_AFTER_SECONDS)
                else:
                    retry = self.retry
                    delay = backoff_delay(attempt, retry.backoff_initial_seconds, retry.backoff_max_seconds)
                await asyncio.sleep(delay)

    async def _release(self, state: _State) -> list[tuple[int, bytes]]:
        """Take the run off the writer; its frames not written yet go with the settle."""
        if self.writer is None or state.entry is None:
            return []
        if state.entry.inflight is None:
            return self.writer.release_now(state.entry)
        return await asyncio.shield(self.writer.release(state.entry))

    # -- the end ---------------------------------------------------------------------------------------

    async def _settle(
        self,
        spec: RunSpec,
        state: _State,
        handle: RunHandle,
        status: str,
        output: Output,
        error: UpstreamError | None,
        produced: bool,
        stored: bool,
    ) -> RunResult:
        pending = await self._release(state)
        start_seq = state.seq
        expect = st.CANCELLED if handle.reason == reasons.CANCELLED else st.IN_PROGRESS
        while True:
            final = self._final(spec, status, output)
            terminal = [state.number(e) for e in _terminal_events(final, error)]
            if not stored:
                break
            assert self.repository is not None and spec.tenant and spec.interaction_id
            if spec.deferred:
                await self._store_finished(spec, state, status, output, final)
                break
            result = await self.repository.finish(
                spec.tenant,
                spec.interaction_id,
                fence=spec.fence,
                expect=expect,
                status=status,
                output=output,
                updated=final.updated or render.timestamp(),
                events=[*pending, *terminal],
            )
            if result.outcome == "ok":
                break
            if result.outcome == "status" and result.detail == st.CANCELLED and expect != st.CANCELLED:
                # a cancel won the race: what was made until now is the cancelled interaction's output
                expect = status = st.CANCELLED
                state.seq = start_seq
                continue
            await self._end_from_log(spec, state)
            return RunResult(interaction=final, error=error, produced=produced, fenced=True)
        if stored and self.histories is not None and spec.tenant and spec.interaction_id:
            # what the next turn continues from: this one's whole conversation
            history = (*spec.request.history, *output.steps)
            self.histories.put(spec.tenant, spec.interaction_id, history, spec.generation)
        if state.listener is not None:
            # a logged run's frames not relayed yet went into the log with the settle
            for _seq, frame in [*pending, *terminal]:
                state.listener.put_nowait(frame)
            state.listener.put_nowait(END)
        return RunResult(interaction=final, error=error, produced=produced)

    async def _end_from_log(self, spec: RunSpec, state: _State) -> None:
        """End the stream of a run that lost the interaction (its lease ran out and it was failed, or it
        was taken over): the client gets the rest of the log, which ends as the record does."""
        if state.listener is None:
            return
        frames: list[bytes] = []
        if self.repository is not None and spec.tenant and spec.interaction_id and state.entry is not None:
            with contextlib.suppress(*UNAVAILABLE):
                frames = await self.repository.log_frames(
                    spec.tenant, spec.interaction_id, after=state.entry.committed
                )
        for frame in frames:
            state.listener.put_nowait(frame)
        if not frames or not sse.is_terminal(frames[-1]):
            info = ErrorInfo(code="run_lost", message="This run lost the interaction to another process")
            state.listener.put_nowait(sse.frame(ErrorEvent(error=info)))
        state.listener.put_nowait(END)

    async def _store_finished(
        self, spec: RunSpec, state: _State, status: str, output: Output, final: Interaction
    ) -> None:
        assert self.repository is not None and spec.tenant and spec.interaction_id
        record = NewRecord(
            status=status,
            created=spec.created,
            updated=final.updated,
            seq=state.seq,
            config=spec.config,
            input_steps=spec.input_steps,
            output=output,
        )
        await self.repository.create(
            spec.tenant,
            spec.interaction_id,
            record,
            previous_interaction_id=spec.previous_interaction_id,
            chain="skip",
            chain_expiry=spec.chain_expiry,
            depth=spec.depth,
        )

    def _final(self, spec: RunSpec, status: str, output: Output) -> Interaction:
        return render.interaction(
            interaction_id=spec.interaction_id,
            status=status,
            config=spec.config,
            created=spec.created,
            updated=render.timestamp(),
            previous_interaction_id=spec.previous_interaction_id,
            steps=output.steps,
            usage=output.usage,
            errors=output.errors,
        )

    def _snapshot(self, spec: RunSpec, status: str) -> Interaction:
        return Interaction(
            id=spec.interaction_id,
            object="interaction",
            status=status,
            model=spec.config.config.model,
            agent=spec.config.config.agent,
            created=spec.created,
            updated=spec.created,
        )


def _is_output(event: UpstreamEvent) -> bool:
    """Steps are output; a usage report alone is not (a retry may still replace it)."""
    return isinstance(event, (StepStarted, StepDelta, StepEnded))


def _terminal_events(final: Interaction, error: UpstreamError | None) -> list[Event]:
    update = InteractionStatusUpdate(interaction_id=final.id or "", status=final.status, usage=final.usage)
    if final.status == st.FAILED:
        info = (final.errors or [ErrorInfo(code="failed", message="The interaction failed")])[0]
        return [update, ErrorEvent(error=info)]
    return [update, InteractionCompleted(interaction=final)]


def _error_code(error: UpstreamError | None) -> str:
    if error is None:
        return "failed"
    if error.timeout:
        return "upstream_timeout"
    if error.misconfigured:
        return "upstream_not_configured"
    return f"upstream_{error.status}" if error.status else "upstream_unavailable"
