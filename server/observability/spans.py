"""The spans of an interaction's trace (README, "Traces"): one hook per place the server makes one.

Off (no OTLP endpoint configured, tracing.py) `_tracer` is None and every hook returns at once: a None or
a shared `nullcontext`, never a no-op span, so a request pays a global's read per hook and nothing else.

On, one trace follows an interaction across processes: the web request's SERVER span (continuing the
caller's `traceparent`), the enqueue's PRODUCER span, whose context the job carries in its kwargs
(store/jobs.py), the worker's CONSUMER span under it, the run's GenAI span (OpenTelemetry's GenAI
semantic conventions: model, provider, tokens, finish reason), the upstream call's CLIENT span (its
`traceparent` sent upstream) and a span per Lua script. A script's span is made only inside a trace:
the background loops' scripts (the event-log writer's batches, the reaper, heartbeats) belong to no
interaction and would each be a trace of one span.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any, Final, Protocol

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util.types import AttributeValue

from ..backend_kinds import provider

#: this process's tracer (tracing.start); None: tracing is off here
_tracer: Tracer | None = None
#: the request headers the propagator reads (traceparent, tracestate, baggage), as ASGI names them
_fields: frozenset[bytes] = frozenset()

_OFF: Final = contextlib.nullcontext()
#: what an upstream is told of the trace
_UPSTREAM: Final = TraceContextTextMapPropagator()


def enable(tracer: Tracer | None) -> None:
    """Make spans with `tracer` from now on (None: no more spans)."""
    global _tracer, _fields
    _tracer = tracer
    _fields = frozenset(name.encode() for name in propagate.get_global_textmap().fields)


def on() -> bool:
    return _tracer is not None


# -- the web request -------------------------------------------------------------------------------------


class RequestSpan:
    """An HTTP request's SERVER span, current in the request's context from its start to its end."""

    __slots__ = ("method", "span", "token")

    def __init__(self, tracer: Tracer, scope: Mapping[str, Any]) -> None:
        carrier = {
            name.decode(): value.decode("latin-1") for name, value in scope["headers"] if name in _fields
        }
        parent = propagate.extract(carrier) if carrier else None
        self.method: str = scope["method"]
        self.span = tracer.start_span(
            self.method,
            context=parent,
            kind=SpanKind.SERVER,
            attributes={
                "http.request.method": self.method,
                "url.path": scope["path"],
                "url.scheme": scope.get("scheme", "http"),
                "network.protocol.version": scope.get("http_version", "1.1"),
            },
        )
        self.token = otel_context.attach(trace.set_span_in_context(self.span, parent))

    def end(self, route: str | None, status: int, request_id: str, interaction_id: str | None) -> None:
        """`route`: litestar's path template (None: no route matched). No query: it may hold a key."""
        otel_context.detach(self.token)
        span = self.span
        # set together: each call takes the span's lock
        attributes: dict[str, str | int] = {"http.response.status_code": status, "ix.request_id": request_id}
        if route is not None:
            span.update_name(f"{self.method} {route}")
            attributes["http.route"] = route
        if interaction_id is not None:
            attributes["ix.interaction_id"] = interaction_id
        if status >= 500:
            # a server span's 4xx is the client's error, not this span's (HTTP conventions)
            span.set_status(Status(StatusCode.ERROR))
            attributes["error.type"] = str(status)
        span.set_attributes(attributes)
        span.end()


#: the probes' and the scrape's paths: polled every few seconds, each would be a trace of one span
_UNTRACED: Final = frozenset({"/healthz", "/readyz", "/metrics"})


def request_started(scope: Mapping[str, Any]) -> RequestSpan | None:
    tracer = _tracer
    if tracer is None or scope["path"] in _UNTRACED:
        return None
    return RequestSpan(tracer, scope)


# -- the background job ----------------------------------------------------------------------------------


def enqueue(queue: str, job_id: str, interaction_id: str) -> AbstractContextManager[dict[str, str] | None]:
    """Around queueing a job: yields the trace context the job is to carry (None when off). Without a
    current trace (a reaper's requeue) the PRODUCER span starts one."""
    tracer = _tracer
    return _OFF if tracer is None else _producer(tracer, queue, job_id, interaction_id)


@contextlib.contextmanager
def _producer(tracer: Tracer, queue: str, job_id: str, interaction_id: str) -> Iterator[dict[str, str]]:
    attributes = _messaging("send", queue, job_id, interaction_id)
    with tracer.start_as_current_span(f"send {queue}", kind=SpanKind.PRODUCER, attributes=attributes):
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        yield carrier


def job(
    carried: Mapping[str, str] | None, queue: str, job_id: str, interaction_id: str
) -> AbstractContextManager[object]:
    """Around a job's run in a worker: a CONSUMER span under the context the job carried, if any."""
    tracer = _tracer
    if tracer is None:
        return _OFF
    parent = propagate.extract(carried) if carried else None
    attributes = _messaging("process", queue, job_id, interaction_id)
    return tracer.start_as_current_span(
        f"process {queue}", context=parent, kind=SpanKind.CONSUMER, attributes=attributes
    )


def _messaging(operation: str, queue: str, job_id: str, interaction_id: str) -> dict[str, str]:
    return {
        "messaging.system": "arq",
        "messaging.operation.type": operation,
        "messaging.operation.name": operation,
        "messaging.destination.name": queue,
        "messaging.message.id": job_id,
        "ix.interaction_id": interaction_id,
    }


# -- the run and its upstream call -----------------------------------------------------------------------


def run(model: str, backend: str, interaction_id: str | None) -> AbstractContextManager[object]:
    """Around a run (every mode): the GenAI inference span, named as the conventions say."""
    tracer = _tracer
    if tracer is None:
        return _OFF
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": model,
        "gen_ai.provider.name": provider(backend),
        # the older conventions' name of the same, still what many backends read
        "gen_ai.system": provider(backend),
    }
    if interaction_id is not None:
        attributes["ix.interaction_id"] = interaction_id
    return tracer.start_as_current_span(f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes)


class Usage(Protocol):
    total_input_tokens: int | None
    total_output_tokens: int | None


def run_ended(status: str, error_code: str | None, usage: Usage | None) -> None:
    """The run's end on its span (the current one): tokens, and its end status as its finish reason."""
    if _tracer is None:
        return
    span = trace.get_current_span()
    attributes: dict[str, AttributeValue] = {"gen_ai.response.finish_reasons": (status,)}
    if usage is not None and usage.total_input_tokens is not None:
        attributes["gen_ai.usage.input_tokens"] = usage.total_input_tokens
    if usage is not None and usage.total_output_tokens is not None:
        attributes["gen_ai.usage.output_tokens"] = usage.total_output_tokens
    if error_code is not None:
        attributes["error.type"] = error_code
        span.set_status(Status(StatusCode.ERROR, error_code))
    span.set_attributes(attributes)


class UpstreamSpan:
    """An upstream call's CLIENT span. Not made current: it lives in an async generator, whose code runs
    in its consumer's context, where a context attached at one `yield` would be seen by the consumer."""

    __slots__ = ("span",)

    def __init__(self, span: Span) -> None:
        self.span = span

    def headers(self) -> dict[str, str]:
        """`traceparent` (and `tracestate`) naming this span, for the upstream. W3C trace context only, not
        the global propagators: a client's `baggage` is for this server's trace, not for a model provider."""
        carrier: dict[str, str] = {}
        _UPSTREAM.inject(carrier, context=trace.set_span_in_context(self.span))
        return carrier

    def answered(self, status: int) -> None:
        self.span.set_attribute("http.response.status_code", status)
        if status >= 400:
            self.failed(str(status))

    def failed(self, error_type: str) -> None:
        self.span.set_attribute("error.type", error_type)
        self.span.set_status(Status(StatusCode.ERROR))

    def end(self) -> None:
        self.span.end()


def upstream_call(scheme: str, host: str, port: int, authority: str, path: str) -> UpstreamSpan | None:
    """A POST to the upstream, from its parsed URL (no user info: `authority` has none)."""
    tracer = _tracer
    if tracer is None:
        return None
    attributes: dict[str, str | int] = {
        "http.request.method": "POST",
        "server.address": host,
        "server.port": port,
        "url.full": f"{scheme}://{authority}{path}",
    }
    return UpstreamSpan(tracer.start_span("POST", kind=SpanKind.CLIENT, attributes=attributes))


# -- Redis -----------------------------------------------------------------------------------------------


def script(name: str) -> AbstractContextManager[object]:
    """Around one Lua script's call (EVALSHA), inside a trace only."""
    tracer = _tracer
    if tracer is None or not trace.get_current_span().is_recording():
        return _OFF
    attributes = {
        "db.system": "redis",
        "db.system.name": "redis",
        "db.operation.name": "EVALSHA",
        "db.stored_procedure.name": name,
    }
    return tracer.start_as_current_span(f"EVALSHA {name}", kind=SpanKind.CLIENT, attributes=attributes)
