"""The Prometheus metrics every process records (README, "Metrics"): the one-call hooks the rest of the
server makes (the families they write are defined in families.py).

Off (`[metrics] enabled = false`, or a worker whose metrics nobody could read) every hook returns at once.
On, a hook adds to a buffer in this process's memory (buffer.py: no lock, no write), and the buffers are
flushed into prometheus-client about once a second, before this process answers a scrape, and at `stop`:
in the multiprocess mode when the launcher set PROMETHEUS_MULTIPROC_DIR (each process into its own mmap'd
files, added up at scrape time, export.py), else into this process's memory. So a scrape shows its own
process's values up to the moment, and the other processes' as of their last flush, up to a second ago.

Each labelled child and its buffer are looked up once and kept in a dict (`.labels()` costs a lock and a
tuple per call), and every label value is bounded. A model is labelled by the configured route that serves
it (its `match`, a name or a glob) or a built-in model's name, anything else `other`, so requests cannot
make series; no tenant, key or interaction id is ever a label.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import re
import time
from collections.abc import AsyncIterator, Sequence
from typing import Final, Protocol

from ..backend_kinds import BUILTIN_MODELS
from . import buffer, export
from .buffer import Count, Spread
from .families import (
    ACTIVE_STREAMS,
    CANCEL_SECONDS,
    CANCELS,
    CREATED,
    FIRST_TOKEN,
    FLUSH_EVENTS,
    FLUSH_SECONDS,
    HTTP_DURATION,
    HTTP_REQUESTS,
    LOST_RUNS,
    PICKUP,
    REDIS_ERRORS,
    RUN_DURATION,
    RUNS_ENDED,
    RUNS_IN_FLIGHT,
    STREAM_RESUMES,
    TOKENS,
    UPSTREAM_ERRORS,
    UPSTREAM_RETRIES,
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


def on() -> bool:
    """Whether metrics are recorded in this process (for hooks kept in other modules: webhooks.py)."""
    return _on


#: (match, backend kind) of each configured route, in order, then the built-in models
_routes: list[tuple[str, str]] = []
_models: dict[str, _Model] = {}
_requests: dict[tuple[str, str, int], tuple[Count, Spread]] = {}
#: the metrics without labels, through their buffers
_IN_FLIGHT, _STREAMS = buffer.count(RUNS_IN_FLIGHT), buffer.count(ACTIVE_STREAMS)
_CANCELS, _RESUMES = buffer.count(CANCELS), buffer.count(STREAM_RESUMES)
_PICKUP, _CANCEL_SECONDS = buffer.spread(PICKUP), buffer.spread(CANCEL_SECONDS)
_FLUSH_EVENTS, _FLUSH_SECONDS = buffer.spread(FLUSH_EVENTS), buffer.spread(FLUSH_SECONDS)


class _Model:
    """A model's label, its backend, and its children's buffers."""

    __slots__ = ("backend", "created", "duration", "ended", "first", "label", "tokens_in", "tokens_out")

    def __init__(self, label: str, backend: str) -> None:
        self.label = label
        self.backend = backend
        self.duration = buffer.spread(RUN_DURATION.labels(label))
        self.first = buffer.spread(FIRST_TOKEN.labels(label))
        self.tokens_in = buffer.count(TOKENS.labels(label, "input"))
        self.tokens_out = buffer.count(TOKENS.labels(label, "output"))
        self.ended: dict[tuple[str, str], Count] = {}
        self.created = {mode: buffer.count(CREATED.labels(label, backend, mode)) for mode in _MODES}


def start(on: bool, routes: Sequence[tuple[str, str]], builtin: Sequence[str] = BUILTIN_MODELS) -> None:
    """At a process's start (a web process, a worker process): record or not. `routes` are the
    configured (match, backend kind), which with the built-in models bound the model labels. Called on
    the process's event loop, it starts the flushes there (buffer.py)."""
    global _on
    _on = False
    if on:
        export.check_mode()
        _routes[:] = [*routes, *((name, name) for name in builtin)]
        _models.clear()
        _on = True
        export.before_scrape(buffer.flush_for_scrape)
        with contextlib.suppress(RuntimeError):  # no loop runs: flushed by a scrape and `stop` only
            buffer.run_on(asyncio.get_running_loop())


def stop() -> None:
    """At a process's end, after its last run: what the buffers hold is written, then the process's live
    gauges stop counting (export.process_exit)."""
    if _on:
        buffer.stop()
    export.process_exit()


def model_label(name: str) -> str:
    """The label a model's metrics carry: the route that matches it (bounded by the configuration)."""
    return _model(name).label


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
            buffer.count(HTTP_REQUESTS.labels(shown, route_label, str(status))),
            buffer.spread(HTTP_DURATION.labels(shown, route_label)),
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
        _IN_FLIGHT.inc()

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
            child = model.ended[status, code] = buffer.count(RUNS_ENDED.labels(model.label, status, code))
        child.inc()

    def left(self) -> None:
        _IN_FLIGHT.dec()


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
        buffer.count(UPSTREAM_ERRORS.labels(_model(model).backend, shown)).inc()


def upstream_retry(model: str) -> None:
    if _on:
        buffer.count(UPSTREAM_RETRIES.labels(_model(model).backend)).inc()


def picked_up(enqueued_ms: int) -> None:
    if _on:
        _PICKUP.observe(max(0.0, time.time() - enqueued_ms / 1000))


def lost_run(action: str) -> None:
    if _on:
        buffer.count(LOST_RUNS.labels(action)).inc()


def cancelled(started: float) -> None:
    """A cancel of a queued or running interaction, answered; `started` is its perf_counter() start."""
    if _on:
        _CANCELS.inc()
        _CANCEL_SECONDS.observe(time.perf_counter() - started)


def streaming(frames: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """An SSE stream's frames, counted in `ix_active_streams` while it is open."""
    return _counted(frames) if _on else frames


async def _counted(frames: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    _STREAMS.inc()
    try:
        async for frame in frames:
            yield frame
    finally:
        _STREAMS.dec()
        # closed now, as the server would close the stream itself (a relay stops its run on a disconnect)
        close = getattr(frames, "aclose", None)
        if close is not None:
            await close()


def stream_resumed() -> None:
    if _on:
        _RESUMES.inc()


def flushed(events: int, seconds: float) -> None:
    if _on:
        _FLUSH_EVENTS.observe(events)
        _FLUSH_SECONDS.observe(seconds)


def redis_failed(where: str) -> None:
    if _on:
        buffer.count(REDIS_ERRORS.labels(where)).inc()
