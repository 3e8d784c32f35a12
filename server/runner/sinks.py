"""Where a run's events and its end go, chosen once by the create plan (runner/plan.py).

    NullSink     store=false: frames to the caller's stream if it has one; nothing is stored
    RecordSink   a plain foreground call: nothing is framed; the record is stored once, finished
    LogSink      streamed or idempotent foreground calls and background jobs: the frames go to the event
                 log (and to the caller once logged); the end is one compare-and-set (runner/log_sink.py)

The runner (runner/run.py) only emits events and asks the sink to settle; what is stored, when and how a
race with a cancel or a takeover is resolved is the sink's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Final, Protocol

import msgspec

from ..errors import AlreadyStored
from ..protocol import sse, views
from ..protocol import status as st
from ..protocol.events import ErrorEvent, Event, InteractionCompleted, InteractionStatusUpdate
from ..protocol.interaction import ErrorInfo, Interaction, Usage
from ..protocol.lifecycle import Event as Move
from ..protocol.records import Output
from ..protocol.steps import Step
from ..store.interactions import Chain, Interactions
from ..store.new_records import NewRecord
from ..store.outage import UNAVAILABLE
from ..upstream.base import UpstreamError
from .histories import Histories
from .retried import through_outage
from .spec import RunSpec

log = logging.getLogger(__name__)

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
    async def remote_started(self, remote_id: str) -> None: ...
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
        output=output,
    )


class Numbered:
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

    async def remote_started(self, remote_id: str) -> None:
        """A remote run (upstream.base.RemoteStarted) is kept only by a run a worker may take over: only
        background runs start one (the interactions backend's check), and their sink is the log's."""
        return None


#: counts what a call that stores nothing used: its status, usage and model calls (store/usage.py)
CountUsage = Callable[[str, Usage | None, int], Awaitable[None]]


class NullSink(Numbered):
    """store=false: the caller's stream (if any) gets each frame at once; what it used is counted once it
    has its end (`count`), which no Redis outage makes fail: that count is lost, with a warning."""

    def __init__(self, spec: RunSpec, listener: Listener | None, count: CountUsage | None = None) -> None:
        super().__init__(spec, framed=listener is not None)
        self.listener: Listener | None = listener
        self.count = count

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
        if self.count is not None and (end.produced or end.error is None):
            try:
                await self.count(end.status, end.output.usage, self.spec.calls.n)
            except UNAVAILABLE as exc:
                log.warning("the usage of a call that stores nothing was not counted (Redis: %s)", exc)
        return RunResult(interaction=final, error=end.error, produced=end.produced)

    async def abandon(self, reason: str) -> RunResult:
        raise AssertionError(f"a run that stores nothing cannot be stopped as {reason}")


class RecordSink(Numbered):
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
            calls=spec.calls.n,
        )
        tenant, interaction_id = spec.tenant, spec.interaction_id

        async def write() -> None:
            await self.interactions.store_finished(
                tenant,
                interaction_id,
                record,
                previous_interaction_id=spec.previous_interaction_id,
                chain=self.chain,
            )

        # its caller waits for it: retried through an outage as long as a background run's end would be
        await through_outage(
            write,
            seconds=2 * self.interactions.lease_ms / 1000,
            landed=lambda exc: isinstance(exc, AlreadyStored),
            outage=None,
            what=f"interaction {interaction_id}",
        )
        # what the next turn continues from: this one's whole conversation
        history = (*spec.request.history, *end.output.steps)
        self.histories.put(spec.tenant, spec.interaction_id, history, self.generation)
        return RunResult(interaction=final, error=end.error, produced=end.produced)

    async def abandon(self, reason: str) -> RunResult:
        raise AssertionError(f"a run nothing can address cannot be stopped as {reason}")
