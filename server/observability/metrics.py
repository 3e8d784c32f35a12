"""The Prometheus metrics every process records (README, "Metrics"): their definitions, and the one-call
hooks the rest of the server makes.

Off (`[metrics] enabled = false`, or a worker whose metrics nobody could read) every hook returns at once.
On, a process writes its values through prometheus-client: in the multiprocess mode when the launcher set
PROMETHEUS_MULTIPROC_DIR (each process into its own mmap'd files, added up at scrape time, export.py),
else into this process's memory.

The hot path stays a few writes per request: each labelled child is looked up once and kept in a dict
(`.labels()` costs a lock and a tuple per call), and every label value is bounded. A model is labelled by
the configured route that serves it (its `match`, a name or a glob) or a built-in model's name, anything
else `other`, so requests cannot make series; no tenant, key or interaction id is ever a label.
"""

from __future__ import annotations

import fnmatch
import re
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any, Final, Protocol

from prometheus_client import Counter, Gauge, Histogram

from . import export

#: run and job durations: runs last from milliseconds (echo) to the 30-minute upstream deadline
_LONG: Final = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)
#: waits that should be short: time to first token, pickup, cancel, a flush
_SHORT: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

HTTP_REQUESTS = Counter(
    "ix_http_requests_total",
    "HTTP requests answered, by route template and status",
    ["method", "route", "status"],
)
HTTP_DURATION = Histogram(
    "ix_http_request_duration_seconds",
    "HTTP request duration, from its head to its last byte (a stream: its whole life)",
    ["method", "route"],
    buckets=_SHORT,
)
CREATED = Counter(
    "ix_interactions_created_total",
    "Interactions created, by model, backend and mode (stateless, foreground, stream, background)",
    ["model", "backend", "mode"],
)
RUN_DURATION = Histogram("ix_run_duration_seconds", "Run duration, start to end", ["model"], buckets=_LONG)
FIRST_TOKEN = Histogram(
    "ix_time_to_first_token_seconds", "From a run's start to its first output", ["model"], buckets=_SHORT
)
TOKENS = Counter("ix_tokens_total", "Tokens reported by the upstream, by direction", ["model", "direction"])
RUNS_ENDED = Counter(
    "ix_runs_ended_total", "Runs ended, by status and (failed) error code", ["model", "status", "error_code"]
)
RUNS_IN_FLIGHT = Gauge("ix_runs_in_flight", "Runs under way", multiprocess_mode="livesum")
PICKUP = Histogram(
    "ix_job_pickup_seconds", "From a background job's enqueue to a worker taking it", buckets=_SHORT
)
LOST_RUNS = Counter("ix_lost_runs_total", "Lost runs the reaper looked after, by what it did", ["action"])
CANCELS = Counter("ix_cancels_total", "Cancels of a queued or running interaction")
CANCEL_SECONDS = Histogram(
    "ix_cancel_seconds", "From a cancel request to the run saved cancelled", buckets=_SHORT
)
UPSTREAM_ERRORS = Counter(
    "ix_upstream_errors_total", "Failed upstream calls, by backend and HTTP status", ["backend", "status"]
)
UPSTREAM_RETRIES = Counter("ix_upstream_retries_total", "Upstream calls retried", ["backend"])
ACTIVE_STREAMS = Gauge("ix_active_streams", "SSE streams open", multiprocess_mode="livesum")
STREAM_RESUMES = Counter("ix_stream_resumes_total", "Streams resumed with a last_event_id")
FLUSH_EVENTS = Histogram(
    "ix_event_log_flush_events",
    "Events written by one event-log flush",
    buckets=(0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000),
)
FLUSH_SECONDS = Histogram("ix_event_log_flush_seconds", "Duration of one event-log flush", buckets=_SHORT)
REDIS_ERRORS = Counter(
    "ix_redis_errors_total", "Redis commands that failed (unreachable, timed out)", ["where"]
)

_MODES = ("stateless", "foreground", "stream", "background")
_METHODS = frozenset({"GET", "POST", "DELETE", "OPTIONS", "HEAD", "PUT", "PATCH"})
#: error codes this server writes (runner/run.py, jobs.py); an upstream's own code is `other`
_CODES = frozenset(
    "failed upstream_timeout upstream_not_configured upstream_unavailable worker_stopped".split()
)
_UPSTREAM_STATUS = re.compile(r"upstream_[1-5][0-9][0-9]")
_MAX_CACHED = 1024

_on = False
#: (match, backend kind) of each configured route, in order, then the built-in models
_routes: list[tuple[str, str]] = []
_models: dict[str, _Model] = {}
_requests: dict[tuple[str, str, int], tuple[Any, Any]] = {}


class _Model:
    """A model's label, its backend, and its children."""

    __slots__ = ("backend", "created", "duration", "ended", "first", "label", "tokens_in", "tokens_out")

    def __init__(self, label: str, backend: str) -> None:
        self.label = label
        self.backend = backend
        self.duration = RUN_DURATION.labels(label)
        self.first = FIRST_TOKEN.labels(label)
        self.tokens_in = TOKENS.labels(label, "input")
        self.tokens_out = TOKENS.labels(label, "output")
        self.ended: dict[tuple[str, str], Any] = {}
        self.created = {mode: CREATED.labels(label, backend, mode) for mode in _MODES}


def start(
    on: bool, routes: Sequence[tuple[str, str]], builtin: Sequence[str] = ("echo", "echo-slow")
) -> None:
    """At a process's start (a web process, a worker process): record or not. `routes` are the
    configured (match, backend kind), which with the built-in models bound the model labels."""
    global _on
    _on = False
    if on:
        export.check_mode()
        _routes[:] = [*routes, *((name, name) for name in builtin)]
        _models.clear()
        _on = True


def _model(name: str) -> _Model:
    found = _models.get(name)
    if found is not None:
        return found
    label, backend = "other", "other"
    for match, kind in _routes:
        if name == match or fnmatch.fnmatchcase(name, match):
            label, backend = match, kind
            break
    made = next((m for m in _models.values() if m.label == label), None) or _Model(label, backend)
    if len(_models) < _MAX_CACHED:
        _models[name] = made
    return made


# -- the hooks -------------------------------------------------------------------------------------------


def observe_request(method: str, route: str | None, status: int, seconds: float) -> None:
    """One HTTP request answered; `route` is litestar's path template (None: no route matched)."""
    if not _on:
        return
    key = (method, route or "unmatched", status)
    children = _requests.get(key)
    if children is None:
        shown = method if method in _METHODS else "other"
        route_label = route or "unmatched"
        children = (
            HTTP_REQUESTS.labels(shown, route_label, str(status)),
            HTTP_DURATION.labels(shown, route_label),
        )
        if len(_requests) < _MAX_CACHED:
            _requests[key] = children
    children[0].inc()
    children[1].observe(seconds)


def created(model: str, mode: str) -> None:
    """An interaction created; `mode` is one of _MODES."""
    if _on:
        _model(model).created[mode].inc()


class Usage(Protocol):
    """What a run's usage report says (protocol/interaction.py's Usage), as far as metrics read it."""

    total_input_tokens: int | None
    total_output_tokens: int | None


class RunTimer:
    """One run's metrics: started in flight, its first output, its end."""

    __slots__ = ("model", "started")

    def __init__(self, model: str) -> None:
        self.model = _model(model)
        self.started = time.perf_counter()
        RUNS_IN_FLIGHT.inc()

    def first_output(self) -> None:
        self.model.first.observe(time.perf_counter() - self.started)

    def ended(self, status: str, error_code: str | None, usage: Usage | None) -> None:
        model = self.model
        model.duration.observe(time.perf_counter() - self.started)
        if usage is not None and usage.total_input_tokens:
            model.tokens_in.inc(usage.total_input_tokens)
        if usage is not None and usage.total_output_tokens:
            model.tokens_out.inc(usage.total_output_tokens)
        code = "" if error_code is None else _code(error_code)
        child = model.ended.get((status, code))
        if child is None:
            child = model.ended[status, code] = RUNS_ENDED.labels(model.label, status, code)
        child.inc()

    def left(self) -> None:
        RUNS_IN_FLIGHT.dec()


class _NoTimer:
    __slots__ = ()

    def first_output(self) -> None:
        return None

    def ended(self, status: str, error_code: str | None, usage: Usage | None) -> None:
        return None

    def left(self) -> None:
        return None


_NO_TIMER: Final = _NoTimer()
Timer = RunTimer | _NoTimer


def run_started(model: str) -> Timer:
    return RunTimer(model) if _on else _NO_TIMER


def _code(code: str) -> str:
    return code if code in _CODES or _UPSTREAM_STATUS.fullmatch(code) else "other"


def upstream_error(model: str, status: int, timeout: bool, misconfigured: bool) -> None:
    if _on:
        shown = (
            str(status)
            if status
            else "timeout"
            if timeout
            else "not_configured"
            if misconfigured
            else "connection"
        )
        UPSTREAM_ERRORS.labels(_model(model).backend, shown).inc()


def upstream_retry(model: str) -> None:
    if _on:
        UPSTREAM_RETRIES.labels(_model(model).backend).inc()


def picked_up(enqueued_ms: int) -> None:
    if _on:
        PICKUP.observe(max(0.0, time.time() - enqueued_ms / 1000))


def lost_run(action: str) -> None:
    if _on:
        LOST_RUNS.labels(action).inc()


def cancelled(started: float) -> None:
    """A cancel of a queued or running interaction, answered; `started` is its perf_counter() start."""
    if _on:
        CANCELS.inc()
        CANCEL_SECONDS.observe(time.perf_counter() - started)


def streaming(frames: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """An SSE stream's frames, counted in `ix_active_streams` while it is open."""
    return _counted(frames) if _on else frames


async def _counted(frames: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    ACTIVE_STREAMS.inc()
    try:
        async for frame in frames:
            yield frame
    finally:
        ACTIVE_STREAMS.dec()
        # closed now, as the server would close the stream itself (a relay stops its run on a disconnect)
        close = getattr(frames, "aclose", None)
        if close is not None:
            await close()


def stream_resumed() -> None:
    if _on:
        STREAM_RESUMES.inc()


def flushed(events: int, seconds: float) -> None:
    if _on:
        FLUSH_EVENTS.observe(events)
        FLUSH_SECONDS.observe(seconds)


def redis_failed(where: str) -> None:
    if _on:
        REDIS_ERRORS.labels(where).inc()
