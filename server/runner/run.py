"""Run one interaction: call the upstream, turn its events into the API's, and end the run.

The same code serves every execution mode; what happens to the events and the end is the sink's
(runner/sinks.py), chosen by the create plan. Whatever ends the run (the model, a cancel, an upstream
failure, a worker shutting down), the output so far goes to the sink's settle with the lifecycle event
that ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable
from typing import Final

from ..errors import NotFound, StoreConflict
from ..limits.meter import Meter
from ..observability import metrics, spans
from ..protocol import events as ev
from ..protocol import lifecycle, views
from ..protocol import status as st
from ..protocol.events import InteractionCreated, InteractionStatusUpdate
from ..protocol.interaction import ErrorInfo
from ..protocol.lifecycle import Event as Move
from ..protocol.records import Output
from ..settings import UpstreamRetrySettings
from ..upstream.base import (
    RemoteStarted,
    StepDelta,
    StepEnded,
    StepStarted,
    UpstreamError,
    UpstreamEvent,
    retry_delay,
)
from . import handle as reasons
from . import remote
from .handle import RunHandle
from .sinks import RunEnd, RunResult, Sink
from .spec import RunSpec
from .tool_loop import mcp_servers
from .tool_run import UNAVAILABLE, ToolRun, ToolServerError
from .turn import TurnBuilder

WORKER_STOPPED: Final = (
    "The worker running this interaction was stopped before it finished; the output made until then is kept"
)
#: the endings that cut a run short of the upstream's own end (and of its end-of-stream usage report)
_CUT: Final = frozenset({st.BUDGET_EXCEEDED, st.CANCELLED, st.FAILED})


class Runner:
    def __init__(self, retry: UpstreamRetrySettings, tools: ToolRun | None = None) -> None:
        self.retry = retry
        #: runs whose request names MCP servers (None: such a request fails, naming why)
        self.tools = tools

    async def run(self, spec: RunSpec, handle: RunHandle, sink: Sink) -> RunResult:
        """Run to the end. A cancellation that did not come through `handle.stop` (a worker shutting
        down) propagates, with nothing settled: the caller hands the run back to the queue."""
        timer = metrics.run_started(spec.request.model)
        try:
            # the run's span is current while it runs: the upstream call and the scripts are its children
            with spans.run(spec.request.model, spec.backend.name, spec.interaction_id):
                return await self._run(spec, handle, sink, timer)
        finally:
            timer.left()

    async def _run(self, spec: RunSpec, handle: RunHandle, sink: Sink, timer: metrics.Timer) -> RunResult:
        turn = TurnBuilder()
        if spec.announce:
            sink.emit(
                InteractionCreated(interaction=views.snapshot(spec.interaction_id, spec.config, spec.created))
            )
        sink.emit(InteractionStatusUpdate(interaction_id=spec.interaction_id or "", status=st.IN_PROGRESS))
        error: UpstreamError | None = None
        emit = _AfterShown(sink, spec.shown) if spec.shown else sink.emit
        meter = Meter(spec.budget, spec.request) if spec.budget is not None else None
        feed = _Feed(turn, emit, timer, meter)
        try:
            try:
                if not feed.over:
                    async with contextlib.aclosing(_recording(self._events(spec), spec, sink)) as events:
                        async for event in events:
                            if feed(event):
                                break  # its budget is used up: the upstream call is closed here
                status = st.BUDGET_EXCEEDED if feed.over else turn.final_status()
            except asyncio.CancelledError:
                if handle.reason is None or (
                    handle.reason == reasons.SHUTDOWN and _handed_back(spec, feed.produced)
                ):
                    raise
                if handle.reason in (reasons.FENCED, reasons.UNAVAILABLE):
                    return await sink.abandon(handle.reason)
                status = st.FAILED if handle.reason == reasons.SHUTDOWN else st.CANCELLED
            except UpstreamError as exc:
                error, status = exc, st.FAILED
        except BaseException:
            await sink.release()
            raise
        handle.settling = True
        for api_event in turn.close_step():
            sink.emit(api_event)
        output = Output(steps=turn.steps, usage=turn.usage, errors=_errors(turn, error, handle.reason))
        if meter is not None:
            _metered(output, meter, status, feed.produced)
        end = RunEnd(event=_end_event(status, handle.reason), status=status, output=output, error=error)
        end.produced = feed.produced
        error_code = output.errors[0].code if output.errors else None
        timer.ended(status, error_code, output.usage)
        spans.run_ended(status, error_code, output.usage)
        result = await sink.settle(end)
        # ended here before it ended there (a cancel, a failure): it would run on with no one to see it
        await remote.cancel_unended(spec.backend, spec.request.remote_id, ended=turn.status is not None)
        return result

    def _events(self, spec: RunSpec) -> AsyncGenerator[UpstreamEvent, None]:
        """The run's events: the backend's, or those of the tool loop when the request names MCP servers."""
        if not mcp_servers(spec.request.config.tools):
            return self._upstream(spec)
        if self.tools is None:
            raise ToolServerError("this process runs no MCP tools")
        return self.tools.events(spec, self._upstream)

    async def _upstream(self, spec: RunSpec) -> AsyncGenerator[UpstreamEvent, None]:
        """The backend's events; a background run retries a failure that came before any output."""
        attempt = 0
        while True:
            produced = False
            spec.calls.n += 1
            try:
                async with contextlib.aclosing(spec.backend.stream(spec.request)) as events:
                    async for event in events:
                        if isinstance(event, RemoteStarted):
                            spec.request.remote_id = event.remote_id  # a retry follows it
                        produced = produced or _is_output(event)
                        yield event
                return
            except UpstreamError as exc:
                metrics.upstream_error(spec.request.model, exc.status, exc.timeout, exc.misconfigured)
                attempt += 1
                if produced or not spec.background or not exc.retryable or attempt >= self.retry.attempts:
                    raise
                metrics.upstream_retry(spec.request.model)
                await asyncio.sleep(self._delay(exc, attempt))

    def _delay(self, exc: UpstreamError, attempt: int) -> float:
        return retry_delay(exc, attempt, self.retry.backoff_initial_seconds, self.retry.backoff_max_seconds)


def _metered(output: Output, meter: Meter, status: str, produced: bool) -> None:
    """A run with a token limit: cut short, it counts what it streamed past the upstream's last report (one
    stopped before its call, nothing left of its budget, counts nothing); its budget's end is said."""
    if produced:
        output.usage = meter.counted(output.usage, cut=status in _CUT)
    if status == st.BUDGET_EXCEEDED:
        output.errors = [*(output.errors or []), meter.error()]


class _Feed:
    """What a run does with each upstream event: the API's events it makes emitted, its first output timed,
    and (with a token budget) its tokens counted: called, it says whether the budget is used up."""

    __slots__ = ("emit", "meter", "over", "produced", "timer", "turn")

    def __init__(
        self, turn: TurnBuilder, emit: Callable[[ev.Event], None], timer: metrics.Timer, meter: Meter | None
    ) -> None:
        self.turn = turn
        self.emit = emit
        self.timer = timer
        self.meter = meter
        self.produced = False
        #: its budget is used up (before it starts, when nothing was left of it)
        self.over = meter is not None and meter.exhausted()

    def __call__(self, event: UpstreamEvent) -> bool:
        if not self.produced and _is_output(event):
            self.produced = True
            self.timer.first_output()
        for api_event in self.turn.feed(event):
            self.emit(api_event)
        if self.meter is not None and self.meter.feed(event):
            self.over = True
        return self.over


class _AfterShown:
    """Emits a re-run's events to its sink but the first `shown` step events: the run before it showed
    them (a remote run, read again from its start, gives the same events again)."""

    def __init__(self, sink: Sink, shown: int) -> None:
        self.sink = sink
        self.left = shown

    def __call__(self, event: ev.Event) -> None:
        if self.left and isinstance(event, ev.StepStart | ev.StepDelta | ev.StepStop):
            self.left -= 1
        else:
            self.sink.emit(event)


def _handed_back(spec: RunSpec, produced: bool) -> bool:
    """Whether a run its worker stops (shutting down) goes back to the queue: one that made no output yet
    (a re-run repeats nothing anyone saw), or whose turn is a remote run (a re-run follows it)."""
    return not produced or spec.request.remote_id is not None


async def _recording(
    events: AsyncGenerator[UpstreamEvent, None], spec: RunSpec, sink: Sink
) -> AsyncGenerator[UpstreamEvent, None]:
    """`events` but a remote run's start, which is recorded before anything else: a re-run follows that
    run, never makes another. Refused (a cancel, a takeover or a delete came first), the remote run is
    nobody's and is cancelled; the run reads on until its writer stops it, as that refusal does."""
    async with contextlib.aclosing(events):
        async for event in events:
            if not isinstance(event, RemoteStarted):
                yield event
                continue
            try:
                await sink.remote_started(event.remote_id)
            except (StoreConflict, NotFound):
                await remote.cancel(spec.backend, event.remote_id)


def _end_event(status: str, reason: str | None) -> Move:
    """The lifecycle event that ends a run: a cancel through the API saves the cancelled interaction's
    output; a stop by this server (its client went away) cancels it from `in_progress`."""
    if reason == reasons.CANCELLED:
        return Move.SAVE_CANCELLED
    if reason == reasons.DISCONNECTED:
        return Move.STOP
    return lifecycle.END_EVENTS[status]


def _errors(turn: TurnBuilder, error: UpstreamError | None, reason: str | None) -> list[ErrorInfo] | None:
    errors = [ErrorInfo(code=_error_code(error), message=str(error))] if error else None
    if reason == reasons.SHUTDOWN:
        errors = [ErrorInfo(code="worker_stopped", message=WORKER_STOPPED)]
    if turn.error is not None:
        errors = [*(errors or []), turn.error]
    return errors


def _is_output(event: UpstreamEvent) -> bool:
    """Steps are output; a usage report alone is not (a retry may still replace it)."""
    return isinstance(event, (StepStarted, StepDelta, StepEnded))


def _error_code(error: UpstreamError | None) -> str:
    if error is None:
        return "failed"
    if isinstance(error, ToolServerError):
        return UNAVAILABLE
    if error.timeout:
        return "upstream_timeout"
    if error.misconfigured:
        return "upstream_not_configured"
    return f"upstream_{error.status}" if error.status else "upstream_unavailable"
