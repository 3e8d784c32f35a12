"""Where this process's traces go (README, "Traces"): OpenTelemetry's SDK, set up from the standard
`OTEL_*` variables, or nothing at all.

Off unless OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT names a collector (and
OTEL_SDK_DISABLED is not true): then the SDK is not even imported, and spans.py's hooks return at once.
On, spans go through a BatchSpanProcessor (a thread that sends them in batches, OTEL_BSP_*) to the OTLP/HTTP
exporter (protobuf; OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION, _CERTIFICATE), and the SDK itself
honours OTEL_TRACES_SAMPLER(_ARG), OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME (default:
"interaction-server"). A variable this server cannot honour is a warning at start, never a quiet default.

`start` runs once a process is what it stays: in each web process granian forked (the app's lifespan) and
in a worker process, so the batch thread runs in the process whose spans it sends. `shutdown` sends what
is left as the process ends.
"""

from __future__ import annotations

import logging
import os
import urllib.parse
import uuid
from collections.abc import Mapping
from importlib.metadata import version
from typing import Any, Final

from . import spans
from .logs import redact_url

log = logging.getLogger(__name__)

DEFAULT_SERVICE: Final = "interaction-server"
ENDPOINT: Final = "OTEL_EXPORTER_OTLP_ENDPOINT"
TRACES_ENDPOINT: Final = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
DISABLED: Final = "OTEL_SDK_DISABLED"
EXPORTER: Final = "OTEL_TRACES_EXPORTER"
PROTOCOLS: Final = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")

#: this process's TracerProvider (the SDK's), while tracing is on
_provider: Any = None


def destination(env: Mapping[str, str]) -> str | None:
    """The URL traces are sent to, or None when tracing is off; logs what is wrong with the variables."""
    disabled = env.get(DISABLED, "").strip().lower()
    if disabled not in ("", "true", "false"):
        log.warning("%s=%r is neither true nor false: taken as false", DISABLED, env[DISABLED])
    url = env.get(TRACES_ENDPOINT) or ""
    if not url and env.get(ENDPOINT):
        # the exporter's own rule: the signal's path is added to the general endpoint, not to the traces one
        url = env[ENDPOINT].removesuffix("/") + "/v1/traces"
    if not url:
        return None
    if disabled == "true":
        log.info("traces are off: %s is true", DISABLED)
        return None
    exporter = env.get(EXPORTER, "otlp").strip().lower()
    if exporter == "none":
        log.info("traces are off: %s is none", EXPORTER)
        return None
    if exporter != "otlp":
        log.warning("%s=%r: this server exports traces by OTLP only; traces are off", EXPORTER, exporter)
        return None
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        log.warning("%s: %r is not an http:// or https:// URL; traces are off", _which(env), redact_url(url))
        return None
    for name in PROTOCOLS:
        protocol = env.get(name, "").strip().lower()
        if protocol and protocol != "http/protobuf":
            log.warning(
                "%s=%r: this server sends traces as http/protobuf only, which %s may not accept",
                name,
                protocol,
                redact_url(url),
            )
            break
    return url


def _which(env: Mapping[str, str]) -> str:
    return TRACES_ENDPOINT if env.get(TRACES_ENDPOINT) else ENDPOINT


def start(kind: str) -> bool:
    """Trace this process (`kind`: web or worker) if the variables say so; whether it does."""
    shutdown()
    url = destination(os.environ)
    if url is None:
        return False
    # imported only when on: the SDK and the exporter (protobuf, requests) cost a process ~50 ms to load
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    global _provider
    resource = _resource(kind)
    # the sampler is the SDK's choice from OTEL_TRACES_SAMPLER (default parentbased_always_on)
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
    _provider = provider
    spans.enable(provider.get_tracer("interaction-server", version("interaction-server")))
    log.info(
        "traces: OTLP/HTTP to %s as service %s (sampler %s)",
        redact_url(url),
        resource.attributes.get("service.name"),
        os.environ.get("OTEL_TRACES_SAMPLER", "parentbased_always_on"),
    )
    return True


def _resource(kind: str) -> Any:
    """This process, as the spans' resource: OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME first, then
    our defaults for what they leave out (a service name, and which process made the span)."""
    from opentelemetry.sdk.resources import Resource

    found = Resource.create({})
    ours: dict[str, str | int] = {
        "service.instance.id": uuid.uuid4().hex,
        "process.pid": os.getpid(),
        "ix.process": kind,
    }
    added = {name: value for name, value in ours.items() if name not in found.attributes}
    # the SDK's own default when neither variable names the service
    if str(found.attributes.get("service.name", "")).startswith("unknown_service"):
        added["service.name"] = DEFAULT_SERVICE
    return found.merge(Resource(added))


def shutdown() -> None:
    """Send the spans still waiting (at the process's end) and stop making spans."""
    global _provider
    spans.enable(None)
    provider, _provider = _provider, None
    if provider is not None:
        provider.shutdown()
