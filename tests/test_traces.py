"""OpenTelemetry traces on the real server (README, "Traces"): a background interaction is one tree across
the web process and a worker process, exported by OTLP/HTTP to a collector (tests/fakes/otlp.py), with the
upstream call's `traceparent` sent upstream and the GenAI conventions' attributes on its run. Without the
OTEL_* variables nothing is exported and nothing is sent upstream. The variables' checks are tested on
their own.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from server.observability import spans, tracing

from .fakes.http import FakeServer, RecordedRequest
from .fakes.loop import fake_in_thread
from .fakes.openai import openai_error, openai_text_script, usage_chunk
from .fakes.otlp import Collector, ReceivedSpan
from .replies import id_of, interaction
from .support import TOPOLOGIES, Stack, StackSpec, new_key, running_stacks, sdk
from .waiting import until

CREATE = "/v1beta/interactions"
ROUTE = "/{version}/interactions"
#: what a web and a worker process both send for one background interaction, by (process, kind, name)
EXPECTED = {
    ("web", "server", "POST /{version}/interactions"),
    ("web", "client", "EVALSHA create"),
    ("web", "producer", "send ix:queue"),
    ("web", "client", "EVALSHA wake"),
    ("worker", "consumer", "process ix:queue"),
    ("worker", "client", "EVALSHA claim"),
    ("worker", "client", "chat fake-model"),
    ("worker", "client", "POST"),
    ("worker", "client", "EVALSHA finish"),
}


@pytest.fixture(scope="module")
def collector() -> Iterator[Collector]:
    with Collector() as started:
        yield started


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeServer]:
    with fake_in_thread(FakeServer()) as fake:
        yield fake


@pytest.fixture(scope="module")
def stacks(
    tmp_path_factory: pytest.TempPathFactory, collector: Collector, upstream: FakeServer
) -> Iterator[tuple[Stack, Stack]]:
    """A stack traced to `collector` (a web process and a worker process), and one with no OTEL_*
    variables at all (a web process with its worker inside), side by side."""
    models = f'[[models]]\nmatch = "fake-*"\nbackend = "openai"\nbase_url = "{upstream.base_url}/v1"\n'
    traced = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50"}
    with pytest.MonkeyPatch.context() as patch:
        # the stacks' processes inherit this environment: the untraced one must not inherit a collector
        for name in [name for name in os.environ if name.startswith("OTEL_")]:
            patch.delenv(name)
        specs = [
            StackSpec(Path(tmp_path_factory.mktemp("traced")), models=models, workers=1, env=traced),
            StackSpec(
                Path(tmp_path_factory.mktemp("untraced")), models=models, topology=TOPOLOGIES["tcp-embedded"]
            ),
        ]
        with running_stacks(specs) as (on, off):
            yield on, off


def trace_of(collector: Collector, interaction_id: str, count: int) -> list[ReceivedSpan]:
    """The spans of the trace of the request that created the interaction, once at least `count` have
    arrived (each get of it is a trace of its own); none of its other spans is in another trace."""

    def found() -> list[ReceivedSpan] | None:
        received = collector.received()
        create = [s for s in received if s.name == f"POST {ROUTE}" and of_interaction(s, interaction_id)]
        if not create:
            return None
        trace = [s for s in received if s.trace_id == create[0].trace_id]
        return trace if len(trace) >= count else None

    try:
        trace = until(found, timeout=20)
    except TimeoutError:
        mine = [s for s in collector.received() if s.trace_id in traces_of(collector, interaction_id)]
        shown = described(mine)
        raise AssertionError(f"no trace of {count} spans for the create; its spans:\n{shown}") from None
    strays = [
        s
        for s in collector.received()
        if of_interaction(s, interaction_id) and s.trace_id != trace[0].trace_id
    ]
    assert all(s.kind == "server" and s.name != f"POST {ROUTE}" for s in strays), described(strays)
    return trace


def traces_of(collector: Collector, interaction_id: str) -> set[str]:
    return {s.trace_id for s in collector.received() if of_interaction(s, interaction_id)}


def of_interaction(span: ReceivedSpan, interaction_id: str) -> bool:
    return span.attributes.get("ix.interaction_id") == interaction_id


def process_of(span: ReceivedSpan) -> str:
    return str(span.resource["ix.process"])


def described(trace: list[ReceivedSpan]) -> str:
    return "\n".join(f"{process_of(s)} {s.kind} {s.name} {s.span_id}<-{s.parent_id}" for s in trace)


def sent_for(upstream: FakeServer, text: str) -> RecordedRequest:
    return until(lambda: next((r for r in upstream.requests if text.encode() in r.body), None))


def test_a_background_interaction_is_one_tree_across_processes(
    stacks: tuple[Stack, Stack], collector: Collector, upstream: FakeServer
) -> None:
    stack = stacks[0]
    upstream.add(openai_text_script("Hello from the worker", usage=usage_chunk(prompt=11, completion=7)))
    client = sdk(stack.url, new_key())
    made = interaction(client.interactions.create(model="fake-model", input="traced hi", background=True))
    interaction_id = id_of(made)
    until(lambda: interaction(client.interactions.get(interaction_id)).status == "completed", timeout=20)

    trace = trace_of(collector, interaction_id, len(EXPECTED))
    shown = described(trace)
    assert EXPECTED <= {(process_of(s), s.kind, s.name) for s in trace}, shown
    # one tree: a single root, and every other span's parent is in the trace
    ids = {s.span_id for s in trace}
    roots = [s for s in trace if not s.parent_id]
    assert [s.kind for s in roots] == ["server"], shown
    assert all(s.parent_id in ids for s in trace if s.parent_id), shown
    # two processes made it: the web process's and the worker's, each its own instance
    by_process = {process_of(s): s.resource for s in trace}
    assert set(by_process) == {"web", "worker"}, shown
    assert by_process["web"]["service.instance.id"] != by_process["worker"]["service.instance.id"]
    assert by_process["web"]["process.pid"] != by_process["worker"]["process.pid"]
    assert {s.resource["service.name"] for s in trace} == {"interaction-server"}

    named = {s.name: s for s in trace}
    # the job continues the producer's context; the run and the upstream call are under the job
    assert named["process ix:queue"].parent_id == named["send ix:queue"].span_id
    assert named["chat fake-model"].parent_id == named["process ix:queue"].span_id
    assert named["POST"].parent_id == named["chat fake-model"].span_id

    # the upstream was told the trace and the call's span
    sent = sent_for(upstream, "traced hi")
    version, trace_id, parent_id, flags = sent.headers["traceparent"].split("-")
    assert (version, trace_id, parent_id) == ("00", roots[0].trace_id, named["POST"].span_id)
    assert int(flags, 16) & 1, "sampled"
    assert named["POST"].attributes["http.response.status_code"] == 200
    assert named["POST"].attributes["url.full"] == f"{upstream.base_url}/v1/chat/completions"


def test_the_run_span_has_the_genai_attributes(
    stacks: tuple[Stack, Stack], collector: Collector, upstream: FakeServer
) -> None:
    stack = stacks[0]
    upstream.add(openai_text_script("Counted words", usage=usage_chunk(prompt=13, completion=5)))
    with httpx.Client(base_url=stack.url, headers={"x-goog-api-key": new_key()}, timeout=30) as http:
        reply = http.post(CREATE, json={"model": "fake-model", "input": "count me"})
    assert reply.status_code == 200, reply.text
    interaction_id = reply.json()["id"]
    trace = trace_of(collector, interaction_id, 4)
    run = next(s for s in trace if s.name == "chat fake-model")
    assert run.attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "fake-model",
        "gen_ai.provider.name": "openai",
        "gen_ai.system": "openai",
        "ix.interaction_id": interaction_id,
        "gen_ai.response.finish_reasons": ["completed"],
        "gen_ai.usage.input_tokens": 13,
        "gen_ai.usage.output_tokens": 5,
    }
    server = next(s for s in trace if s.kind == "server")
    assert server.attributes["ix.request_id"] == reply.headers["x-request-id"]
    assert server.attributes["ix.interaction_id"] == interaction_id
    assert server.attributes["http.route"] == "/{version}/interactions"
    assert server.attributes["http.response.status_code"] == 200


def test_a_callers_traceparent_is_continued_and_its_baggage_stays_here(
    stacks: tuple[Stack, Stack], collector: Collector, upstream: FakeServer
) -> None:
    stack = stacks[0]
    upstream.add(openai_text_script("In your trace"))
    caller_trace, caller_span = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    with httpx.Client(base_url=stack.url, headers={"x-goog-api-key": new_key()}, timeout=30) as http:
        reply = http.post(
            CREATE,
            json={"model": "fake-model", "input": "continue mine"},
            headers={"traceparent": f"00-{caller_trace}-{caller_span}-01", "baggage": "user=alice"},
        )
    assert reply.status_code == 200, reply.text
    trace = trace_of(collector, reply.json()["id"], 4)
    server = next(s for s in trace if s.kind == "server")
    assert (server.trace_id, server.parent_id) == (caller_trace, caller_span)
    sent = sent_for(upstream, "continue mine")
    assert sent.headers["traceparent"].split("-")[1] == caller_trace
    # the trace's id goes upstream, the caller's baggage (meant for this server's trace) does not
    assert "baggage" not in sent.headers, sent.headers


def test_a_failed_upstream_call_is_an_error_span(
    stacks: tuple[Stack, Stack], collector: Collector, upstream: FakeServer
) -> None:
    stack = stacks[0]
    upstream.add(openai_error(400, "no such thing", "invalid_request_error"))
    with httpx.Client(base_url=stack.url, headers={"x-goog-api-key": new_key()}, timeout=30) as http:
        reply = http.post(CREATE, json={"model": "fake-model", "input": "fail me", "background": True})
        interaction_id = reply.json()["id"]
        until(lambda: http.get(f"{CREATE}/{interaction_id}").json()["status"] == "failed", timeout=20)
    trace = trace_of(collector, interaction_id, len(EXPECTED))
    call = next(s for s in trace if s.name == "POST")
    run = next(s for s in trace if s.name == "chat fake-model")
    assert call.status == run.status == 2  # error
    assert call.attributes["http.response.status_code"] == 400 and call.attributes["error.type"] == "400"
    assert run.attributes["error.type"] == "upstream_400"
    assert run.attributes["gen_ai.response.finish_reasons"] == ["failed"]


def test_without_otel_variables_nothing_is_traced(
    stacks: tuple[Stack, Stack], collector: Collector, upstream: FakeServer
) -> None:
    off = stacks[1]
    upstream.add(openai_text_script("Plain one"), openai_text_script("Plain two"))
    client = sdk(off.url, new_key())
    client.interactions.create(model="fake-model", input="untraced foreground")
    made = interaction(client.interactions.create(model="fake-model", input="untraced job", background=True))
    until(lambda: interaction(client.interactions.get(id_of(made))).status == "completed", timeout=20)
    for text in ("untraced foreground", "untraced job"):
        sent = sent_for(upstream, text)
        assert "traceparent" not in sent.headers and "x-request-id" in sent.headers, sent.headers
    log = off.servers[0][0].log()
    assert "traces:" not in log and "opentelemetry" not in log
    # a process that traced would not send to this collector (it is not named): no span of these
    # interactions may come from the traced stack either
    assert not [s for s in collector.received() if of_interaction(s, id_of(made))]


# -- the variables, in this process ----------------------------------------------------------------------


def test_tracing_is_off_unless_an_endpoint_is_named(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger=tracing.__name__):
        assert tracing.destination({}) is None
        assert tracing.destination({"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on"}) is None
    assert caplog.records == []
    assert not spans.on()
    assert spans.request_started({"type": "http", "method": "GET", "path": "/", "headers": []}) is None


@pytest.mark.parametrize(
    ("env", "url"),
    [
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, "http://collector:4318/v1/traces"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"}, "http://collector:4318/v1/traces"),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://c.example/t"}, "https://c.example/t"),
        (
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:1",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:2/x",
            },
            "http://b:2/x",
        ),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:1", "OTEL_SDK_DISABLED": "false"}, "http://a:1/v1/traces"),
    ],
)
def test_where_traces_go(env: dict[str, str], url: str, caplog: pytest.LogCaptureFixture) -> None:
    assert tracing.destination(env) == url
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


@pytest.mark.parametrize(
    ("env", "warning"),
    [
        ({"OTEL_TRACES_EXPORTER": "console"}, "OTEL_TRACES_EXPORTER='console'"),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "collector:4318"}, "is not an http:// or https:// URL"),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "ftp://collector/"}, "is not an http:// or https:// URL"),
        ({"OTEL_SDK_DISABLED": "yes"}, "neither true nor false"),
    ],
)
def test_a_variable_that_cannot_be_honoured_is_a_warning_and_traces_are_off(
    env: dict[str, str], warning: str, caplog: pytest.LogCaptureFixture
) -> None:
    base = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}
    with caplog.at_level(logging.INFO, logger=tracing.__name__):
        found = tracing.destination({**base, **env})
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(warning in message for message in warnings), warnings
    # a SDK_DISABLED that is not "true" is false: on, with its warning
    assert (found is not None) == ("OTEL_SDK_DISABLED" in env)


def test_a_protocol_other_than_http_protobuf_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    assert tracing.destination(env) == "http://collector:4317/v1/traces"
    assert any("http/protobuf only" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


@pytest.mark.parametrize(("value", "why"), [("true", "OTEL_SDK_DISABLED"), ("TRUE", "OTEL_SDK_DISABLED")])
def test_disabled_sdk_means_off(value: str, why: str, caplog: pytest.LogCaptureFixture) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": value}
    with caplog.at_level(logging.INFO, logger=tracing.__name__):
        assert tracing.destination(env) is None
    assert any(why in r.getMessage() for r in caplog.records)
    none = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"}
    assert tracing.destination(none) is None
