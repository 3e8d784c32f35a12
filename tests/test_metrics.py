"""Prometheus metrics (README, "Metrics"), scraped from real servers after real interactions through the
official SDK: the counters and histograms with their labels and values, added up across web processes
and a worker process sharing PROMETHEUS_MULTIPROC_DIR; label cardinality bounded by the configuration.

Each process keeps its values in buffers and flushes them about once a second (server/observability/
buffer.py): a scrape sees the answering process's values at once and another process's after its next
flush, so the checks of another process's values wait for them (`until`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from google import genai
from google.genai._interactions import InternalServerError

from .fakes.http import FakeServer, json_error
from .fakes.loop import fake_in_thread
from .metrics_scrape import Samples, scrape
from .replies import id_of, interaction
from .support import Process, Stack, new_key, running_stack, sdk
from .waiting import until

SLOW_WORDS = " ".join(f"w{i}" for i in range(200))  # 10 s of echo-slow: cancelled long before


@pytest.fixture(scope="module")
def failing() -> Iterator[FakeServer]:
    """An OpenAI-compatible upstream that answers every call with a 500."""
    with fake_in_thread(FakeServer(json_error(500, {"error": {"message": "it broke"}}))) as fake:
        yield fake


def models_toml(fake: FakeServer) -> str:
    return f'[[models]]\nmatch = "fake-*"\nbackend = "openai"\nbase_url = "{fake.base_url}/v1"\n'


def test_a_scrape_after_a_few_interactions(tmp_path: Path, failing: FakeServer) -> None:
    shared = tmp_path / "metrics"
    # the worker is a process of its own, given the server's directory as an operator would
    env = {"PROMETHEUS_MULTIPROC_DIR": str(shared)}
    with running_stack(tmp_path, models=models_toml(failing), workers=1, env=env) as stack:
        client = sdk(stack.url, new_key())
        for _ in range(2):
            interaction(client.interactions.create(model="echo", input="two words"))
        streamed = list(client.interactions.create(model="echo", input="a streamed one", stream=True))
        assert streamed[-1].event_type == "interaction.completed"
        job = interaction(
            client.interactions.create(model="echo", input="in the background", background=True)
        )
        until(lambda: client.interactions.get(id_of(job)).status == "completed")
        with client.interactions.get(id_of(job), stream=True, last_event_id="evt_2") as resumed:
            assert [event.event_type for event in resumed][-1] == "interaction.completed"
        slow = interaction(client.interactions.create(model="echo-slow", input=SLOW_WORDS, background=True))
        until(lambda: client.interactions.get(id_of(slow)).status == "in_progress")
        time.sleep(0.3)
        assert client.interactions.cancel(id_of(slow)).status == "cancelled"
        with pytest.raises(InternalServerError):
            client.interactions.create(model="fake-model", input="fails upstream")
        # the worker process's values reach the files at its next flush
        samples = until(lambda: worker_flushed(scrape(stack.url)))
        document = httpx.get(f"{stack.url}/openapi.json").json()
    check_creates_and_runs(samples)
    # served on the API's port: described there
    scrape_doc = document["paths"]["/metrics"]["get"]
    assert scrape_doc["security"] == []
    assert list(scrape_doc["responses"]["200"]["content"]) == ["text/plain; version=0.0.4; charset=utf-8"]
    check_the_rest(samples)


def worker_flushed(samples: Samples) -> Samples | None:
    """The scrape, once it holds what the worker process did (both pickups, the runs ended there)."""
    ended = "ix_runs_ended_total"
    done = (
        samples.value("ix_job_pickup_seconds_count") == 2
        and samples.value(ended, model="echo-slow", status="cancelled", error_code="") == 1
        and samples.value(ended, model="echo", status="completed", error_code="") == 4
        and samples.value("ix_runs_in_flight") == 0
    )
    return samples if done else None


def check_creates_and_runs(samples: Samples) -> None:
    created = "ix_interactions_created_total"
    assert samples.value(created, model="echo", backend="echo", mode="foreground") == 2
    assert samples.value(created, model="echo", backend="echo", mode="stream") == 1
    assert samples.value(created, model="echo", backend="echo", mode="background") == 1
    assert samples.value(created, model="echo-slow", backend="echo-slow", mode="background") == 1
    assert samples.value(created, model="fake-*", backend="openai", mode="foreground") == 1
    ended = "ix_runs_ended_total"
    assert samples.value(ended, model="echo", status="completed", error_code="") == 4
    assert samples.value(ended, model="echo-slow", status="cancelled", error_code="") == 1
    assert samples.value(ended, model="fake-*", status="failed", error_code="upstream_500") == 1
    assert samples.value("ix_run_duration_seconds_count", model="echo") == 4
    assert samples.value("ix_time_to_first_token_seconds_count", model="echo") == 4
    # "two words" twice, echoed: the echo models count a word as a token
    assert samples.value("ix_tokens_total", model="echo", direction="output") >= 4
    assert samples.value("ix_tokens_total", model="echo", direction="input") >= 4
    assert samples.value("ix_runs_in_flight") == 0


def check_the_rest(samples: Samples) -> None:
    # both background jobs were taken by the worker process: its values are in the web's scrape
    assert samples.value("ix_job_pickup_seconds_count") == 2
    assert samples.value("ix_cancels_total") == 1
    assert samples.value("ix_cancel_seconds_count") == 1
    assert samples.value("ix_upstream_errors_total", backend="openai", status="500") == 1
    assert samples.value("ix_stream_resumes_total") == 1
    assert samples.value("ix_active_streams") == 0
    assert samples.value("ix_queue_depth") == 0
    assert samples.value("ix_event_log_flush_events_count") >= 1
    assert samples.value("ix_event_log_flush_seconds_count") >= 1
    route = "/{version}/interactions"
    creates = samples.matching("ix_http_requests_total", method="POST", route=route)
    assert sum(value for labels, value in creates if labels["status"] == "200") == 5
    assert sum(value for labels, value in creates if labels["status"].startswith("5")) == 1
    assert samples.value("ix_http_request_duration_seconds_count", method="POST", route=route) == 6
    cancels = samples.matching(
        "ix_http_requests_total", route="/{version}/interactions/{interaction_id}/cancel"
    )
    assert [value for _labels, value in cancels] == [1]


def test_two_web_processes_add_up(tmp_path: Path) -> None:
    shared = tmp_path / "metrics"
    env = {"WEB_PROCESSES": "2", "EMBEDDED_WORKER": "1", "PROMETHEUS_MULTIPROC_DIR": str(shared)}
    with running_stack(tmp_path, env=env) as stack:
        key = new_key()
        for _ in range(40):
            # a connection each, so that both processes take some
            response = httpx.post(
                f"{stack.url}/v1beta/interactions",
                headers={"x-goog-api-key": key},
                json={"model": "echo", "input": "hi"},
            )
            assert response.status_code == 200
        # once one scrape holds both processes' counts (the other one's come with its next flush)...
        until(
            lambda: (
                scrape(stack.url).value(
                    "ix_interactions_created_total", model="echo", backend="echo", mode="foreground"
                )
                == 40
            )
        )
        # ...every scrape does, whichever process answers it
        values = {
            scrape(stack.url).value(
                "ix_interactions_created_total", model="echo", backend="echo", mode="foreground"
            )
            for _ in range(6)
        }
        writers = {path.name.rsplit("_", 1)[1] for path in shared.glob("counter_*.db")}
    assert values == {40}
    assert len(writers) == 2


def test_metrics_off_answer_404(tmp_path: Path) -> None:
    with running_stack(tmp_path, env={"METRICS": "0"}) as stack:
        assert httpx.get(f"{stack.url}/metrics").status_code == 404
        assert httpx.get(f"{stack.url}/healthz").status_code == 200
        assert "/metrics" not in httpx.get(f"{stack.url}/openapi.json").json()["paths"]


def test_metrics_on_a_port_of_their_own(tmp_path: Path) -> None:
    from server.launch.redis_process import free_port

    port = free_port()
    with running_stack(tmp_path, env={"METRICS_PORT": str(port), "EMBEDDED_WORKER": "1"}) as stack:
        interaction(sdk(stack.url, new_key()).interactions.create(model="echo", input="hi"))
        assert httpx.get(f"{stack.url}/metrics").status_code == 404
        assert "/metrics" not in httpx.get(f"{stack.url}/openapi.json").json()["paths"]
        # the launcher answers from the files: the web process's values as of its last flush
        samples = until(lambda: created_once(scrape(f"http://127.0.0.1:{port}")))
    assert samples.value("ix_queue_depth") == 0


def created_once(samples: Samples) -> Samples | None:
    created = samples.value("ix_interactions_created_total", model="echo", backend="echo", mode="foreground")
    return samples if created == 1 else None


def test_labels_stay_bounded(tmp_path: Path, failing: FakeServer) -> None:
    with running_stack(tmp_path, models=models_toml(failing), env={"EMBEDDED_WORKER": "1"}) as stack:
        key = new_key()
        with httpx.Client(base_url=stack.url, headers={"x-goog-api-key": key}) as http:
            for index in range(50):
                # unknown names are refused; names a glob route takes are its one label
                assert http.post(
                    "/v1beta/interactions", json={"model": f"nope-{index}", "input": "x"}
                ).is_error
                http.post("/v1beta/interactions", json={"model": f"fake-{index}", "input": "x"})
                http.get(f"/no/such/path/{index}")
        samples = scrape(stack.url)
    models = {labels["model"] for name, labels, _v in samples.all if "model" in labels}
    assert models <= {"echo", "echo-slow", "fake-*"}
    assert samples.value("ix_upstream_errors_total", backend="openai", status="500") == 50
    routes = {labels["route"] for name, labels, _v in samples.all if name == "ix_http_requests_total"}
    assert "unmatched" in routes and not any("no/such" in route for route in routes)


def test_a_worker_on_its_own_port(tmp_path: Path) -> None:
    """A worker that does not share the server's directory (another host) serves its own values."""
    from server.launch.redis_process import free_port

    port = free_port()
    with running_stack(tmp_path, workers=1, env={"METRICS_WORKER_PORT": str(port)}) as stack:
        client = sdk(stack.url, new_key())
        job = interaction(client.interactions.create(model="echo", input="hi", background=True))
        until(lambda: client.interactions.get(id_of(job)).status == "completed")
        worker = scrape(f"http://127.0.0.1:{port}")
        web = scrape(stack.url)
    assert worker.value("ix_job_pickup_seconds_count") == 1
    assert worker.value("ix_runs_ended_total", model="echo", status="completed", error_code="") == 1
    # the web process only queued it
    assert web.value("ix_job_pickup_seconds_count") == 0
    assert web.value("ix_interactions_created_total", model="echo", backend="echo", mode="background") == 1


def test_redis_errors_are_counted_and_the_scrape_still_answers(tmp_path: Path) -> None:
    with running_stack(tmp_path, env={"EMBEDDED_WORKER": "1"}) as stack:
        key = new_key()
        made = id_of(interaction(sdk(stack.url, key).interactions.create(model="echo", input="hi")))
        stack.redis.stop()
        # a request whose Redis command fails: answered 503, and counted
        url = f"{stack.url}/v1beta/interactions/{made}"
        assert httpx.get(url, headers={"x-goog-api-key": key}, timeout=10).status_code == 503

        def counted() -> Samples | None:
            samples = scrape(stack.url)
            return samples if samples.matching("ix_redis_errors_total", where="reaper") else None

        samples = until(counted, timeout=15)
    assert samples.value("ix_redis_errors_total", where="request") == 1
    assert samples.value("ix_redis_errors_total", where="metrics queue depth") >= 1
    # the depth is not known: no sample, rather than a false zero
    assert not samples.matching("ix_queue_depth")


# -- the buffers (server/observability/buffer.py) ----------------------------------------------------------


def test_a_scrape_holds_its_own_process_values_at_once(tmp_path: Path) -> None:
    """Each create is in the very next scrape of the same process, long before the timer's flush."""
    with running_stack(tmp_path, env={"EMBEDDED_WORKER": "1"}) as stack:
        with httpx.Client(base_url=stack.url, headers={"x-goog-api-key": new_key()}) as http:
            for count in range(1, 6):
                answer = http.post("/v1beta/interactions", json={"model": "echo", "input": "hi"})
                assert answer.status_code == 200
                samples = scrape(stack.url)
                created = "ix_interactions_created_total"
                assert samples.value(created, model="echo", backend="echo", mode="foreground") == count
                ended = "ix_runs_ended_total"
                assert samples.value(ended, model="echo", status="completed", error_code="") == count
                assert samples.value("ix_run_duration_seconds_count", model="echo") == count


def test_another_process_values_and_live_gauges(tmp_path: Path) -> None:
    """A worker process's values reach the web's scrape with its next flush, the live gauges add up over
    the processes (and drop a killed one), and a worker that stops flushes what it had."""
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics")}
    with running_stack(tmp_path, workers=1, env=env) as stack:
        key = new_key()
        client = sdk(stack.url, key)
        job = interaction(client.interactions.create(model="echo", input="hi", background=True))
        until(lambda: client.interactions.get(id_of(job)).status == "completed")
        finished = time.monotonic()
        until(lambda: scrape(stack.url).value("ix_job_pickup_seconds_count") == 1, timeout=5)
        # a flush a second, and a scrape that takes a moment: well within two
        assert time.monotonic() - finished < 2.5
        check_live_gauges(stack, client, key)
        check_a_stopped_worker(stack, client)
        check_a_killed_worker(stack, client, env)


def gauges(url: str) -> tuple[float, float]:
    samples = scrape(url)
    return samples.value("ix_runs_in_flight"), samples.value("ix_active_streams")


def check_live_gauges(stack: Stack, client: genai.Client, key: str) -> None:
    """A background run in the worker, a streamed one in the web process: in flight 2, one stream open."""
    slow = interaction(client.interactions.create(model="echo-slow", input=SLOW_WORDS, background=True))
    until(lambda: client.interactions.get(id_of(slow)).status == "in_progress")
    body = {"model": "echo-slow", "input": SLOW_WORDS, "stream": True}
    headers = {"x-goog-api-key": key}
    with httpx.stream("POST", f"{stack.url}/v1beta/interactions", json=body, headers=headers) as stream:
        # the iterator is kept: dropped, it would close the response
        chunks = stream.iter_bytes()
        assert next(chunks).startswith(b"event: interaction.created")
        until(lambda: gauges(stack.url) == (2, 1), timeout=5)
        assert client.interactions.cancel(id_of(slow)).status == "cancelled"
        until(lambda: gauges(stack.url) == (1, 1), timeout=5)
    # the client went away: its run stops, its stream closes
    until(lambda: gauges(stack.url) == (0, 0), timeout=5)


def check_a_stopped_worker(stack: Stack, client: genai.Client) -> None:
    """SIGTERM right after a job: what the worker had not flushed yet is written as it stops."""
    before = scrape(stack.url).value("ix_job_pickup_seconds_count")
    job = interaction(client.interactions.create(model="echo", input="hi", background=True))
    until(lambda: client.interactions.get(id_of(job)).status == "completed")
    worker = stack.workers[0]
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=15) == 0
    # no process writes these any more: the scrape reads what the worker left
    assert scrape(stack.url).value("ix_job_pickup_seconds_count") == before + 1
    stack.workers.clear()


def check_a_killed_worker(stack: Stack, client: genai.Client, env: dict[str, str]) -> None:
    """A worker killed during a run: its run stops counting in flight (its files' live gauges are dropped)."""
    worker = stack.start_worker(**env)
    slow = interaction(client.interactions.create(model="echo-slow", input=SLOW_WORDS, background=True))
    # a loaded machine (the suite's three processes, each with servers of its own) can take a while
    until(lambda: client.interactions.get(id_of(slow)).status == "in_progress", timeout=30)
    until_in_flight(stack, worker, 1)
    worker.signal(signal.SIGKILL)
    worker.wait(timeout=15)
    until_in_flight(stack, worker, 0)


def until_in_flight(stack: Stack, worker: Process, runs: int) -> None:
    """The runs in flight a scrape adds up reach `runs` (the worker flushes a second; a loaded machine
    scrapes slowly): a failure says what was seen and what the worker logged."""
    seen: list[tuple[float, float]] = []

    def reached() -> bool:
        seen.append(gauges(stack.url))
        return seen[-1][0] == runs

    try:
        until(reached, timeout=15)
    except TimeoutError:
        log = worker.log_path.read_text(errors="replace")[-2000:]
        said = f"runs in flight never {runs}: last scrapes {seen[-3:]}; worker log:\n{log}"
        raise AssertionError(said) from None


EXITING = """
import asyncio
from server.observability import metrics

async def main() -> None:
    metrics.start(True, [])
    metrics.created("echo", "foreground")
    timer = metrics.run_started("echo")
    timer.first_output()
    timer.ended("completed", None, None)
    timer.left()
    metrics.stop()

asyncio.run(main())
"""


def test_a_process_that_exits_flushes_what_it_had(tmp_path: Path) -> None:
    """A process that records and stops within its first second, before any timer's flush."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.multiprocess import MultiProcessCollector

    directory = tmp_path / "metrics"
    directory.mkdir()
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory)}
    subprocess.run([sys.executable, "-c", EXITING], env=env, check=True, timeout=60)
    registry = CollectorRegistry()
    MultiProcessCollector(registry, str(directory))  # type: ignore[no-untyped-call]  # untyped upstream
    samples = Samples(generate_latest(registry).decode())
    assert (
        samples.value("ix_interactions_created_total", model="echo", backend="echo", mode="foreground") == 1
    )
    assert samples.value("ix_runs_ended_total", model="echo", status="completed", error_code="") == 1
    assert samples.value("ix_run_duration_seconds_count", model="echo") == 1
    assert samples.value("ix_time_to_first_token_seconds_count", model="echo") == 1
    # the process exited: its live gauge is gone with it
    assert samples.value("ix_runs_in_flight") == 0


def test_a_buffered_histogram_adds_up_as_observe_would() -> None:
    """The buffer files observations by bucket as prometheus-client's own `observe` does (bounds, the
    +Inf bucket, negative values), through the private attributes it relies on."""
    from prometheus_client import CollectorRegistry, Histogram, generate_latest

    from server.observability import buffer

    values = [0.0, 0.001, 0.0015, 0.01, 0.1, 1.0, 7.5, -2.0, 1e9, 0.05] * 7
    direct, buffered = CollectorRegistry(), CollectorRegistry()
    bounds = (0.001, 0.01, 0.1, 1.0)
    plain = Histogram("h", "h", ["x"], buckets=bounds, registry=direct).labels("a")
    spread = buffer.Spread(Histogram("h", "h", ["x"], buckets=bounds, registry=buffered).labels("a"))
    for value in values:
        plain.observe(value)
        spread.observe(value)
    # nothing reaches the child before a flush
    assert Samples(generate_latest(buffered).decode()).value("h_count", x="a") == 0
    spread.flush()
    spread.flush()  # nothing left: a second flush adds nothing

    def lines(registry: CollectorRegistry) -> list[str]:
        return [line for line in generate_latest(registry).decode().splitlines() if "_created" not in line]

    assert lines(buffered) == lines(direct)
