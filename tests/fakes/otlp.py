"""A fake OpenTelemetry collector: OTLP/HTTP's `POST /v1/traces` with protobuf bodies, on 127.0.0.1.

It decodes each export with opentelemetry-proto's `ExportTraceServiceRequest` (the collector's own
message) and keeps every span flattened with its resource, so a test can rebuild the traces the server's
processes sent.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# protobuf ships no types (opentelemetry-proto's stubs do)
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

KINDS = {
    Span.SPAN_KIND_INTERNAL: "internal",
    Span.SPAN_KIND_SERVER: "server",
    Span.SPAN_KIND_CLIENT: "client",
    Span.SPAN_KIND_PRODUCER: "producer",
    Span.SPAN_KIND_CONSUMER: "consumer",
}


@dataclass(frozen=True)
class ReceivedSpan:
    trace_id: str
    span_id: str
    #: "" for a trace's root
    parent_id: str
    name: str
    kind: str
    attributes: dict[str, Any]
    resource: dict[str, Any]
    start_ns: int
    end_ns: int
    #: the span's status code: 0 unset, 1 ok, 2 error
    status: int


def value_of(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return [value_of(item) for item in value.array_value.values]
    return None if which is None else getattr(value, which)


def attributes_of(pairs: Iterator[KeyValue] | Any) -> dict[str, Any]:
    return {pair.key: value_of(pair.value) for pair in pairs}


def flatten(request: ExportTraceServiceRequest) -> list[ReceivedSpan]:
    found = []
    for resource_spans in request.resource_spans:
        resource = attributes_of(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                found.append(
                    ReceivedSpan(
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_id=span.parent_span_id.hex(),
                        name=span.name,
                        kind=KINDS.get(span.kind, "unspecified"),
                        attributes=attributes_of(span.attributes),
                        resource=resource,
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                        status=span.status.code,
                    )
                )
    return found


class Collector:
    """The receiver, serving from a thread of its own; `spans` grows as exports arrive."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        #: every export request's path, content type and whether it decoded
        self.exports: list[tuple[str, str, bool]] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, name="otlp-collector", daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Collector:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def received(self) -> list[ReceivedSpan]:
        with self.lock:
            return list(self.spans)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                request = ExportTraceServiceRequest()
                try:
                    request.ParseFromString(body)
                    decoded = self.path == "/v1/traces"
                except DecodeError:
                    decoded = False
                with collector.lock:
                    collector.exports.append((self.path, self.headers.get("content-type", ""), decoded))
                    if decoded:
                        collector.spans.extend(flatten(request))
                reply = ExportTraceServiceResponse().SerializeToString() if decoded else b"not OTLP"
                self.send_response(200 if decoded else 400)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        return Handler
