"""Runs whose process is lost, stopped or stalls: what their clients saw is what the record holds.

The semantics (README, "When a process is lost"): a run whose clients saw no output yet is run again; one
whose clients saw output is not (a second answer would follow the first one's part), it fails with that
output kept. A foreground stream always ends, with the record's own end.
"""

from __future__ import annotations

import random
import signal
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis as sync_redis

from .fakes.http import FakeServer
from .fakes.loop import fake_in_thread
from .fakes.openai import openai_text_script
from .inproc import ThreadedApp, threaded
from .sse import events
from .support import Stack, new_key, running_stack, tenant_of
from .waiting import until

WORDS = " ".join(f"w{i}" for i in range(80))  # 4 s of echo-slow
BACK_KEY = "lost-runs-back-key"
#: this module's lease: a lost run is seen within about this long (TEST_CONFIG's is 2 s)
LEASE = 1.5


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeServer]:
    with fake_in_thread(FakeServer()) as server:
        yield server


@pytest.fixture(scope="module")
def back(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedApp]:
    """Another instance of this server as a Google Interactions upstream, whose agent `slow-agent` says a
    word a second (echo-slow): a remote run the tests' workers follow."""
    config = {"echo": {"slow_word_delay_ms": 1000}}
    with threaded(Path(tmp_path_factory.mktemp("lost-back")), config=config) as app:
        agent = {"id": "slow-agent", "base_agent": "echo-slow"}
        made = httpx.post(f"{app.url}/v1beta/agents", json=agent, headers={"x-goog-api-key": BACK_KEY})
        assert made.status_code == 200, made.text
        yield app


@pytest.fixture(scope="module")
def lost(fake: FakeServer, back: ThreadedApp, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """One web process, workers the tests start and kill; `slow-*` is a fake upstream that waits 3 s
    before its first token, `remote-agent-*` the back's agent."""
    models = f'[[models]]\nmatch = "slow-*"\nbackend = "openai"\nbase_url = "{fake.base_url}/v1"\n'
    models += (
        f'[[models]]\nmatch = "remote-agent-*"\nbackend = "interactions"\nbase_url = "{back.url}"\n'
        'api_key_env = "IX_LOST_BACK_KEY"\nupstream_model = "slow-agent"\n'
    )
    config = {
        "runner": {
            "max_attempts": 2,
            "lease_seconds": LEASE,
            "heartbeat_seconds": 0.3,
            "reaper_interval_seconds": 0.1,
        },
        # a run longer than this outlives a SIGTERM's grace; a short one (0.3 s of echo-slow) does not
        "worker": {"shutdown_grace_seconds": 1.5},
    }
    env = {"IX_LOST_BACK_KEY": BACK_KEY}
    with running_stack(Path(tmp_path_factory.mktemp("lost")), config=config, models=models, env=env) as stack:
        yield stack


@pytest.fixture
def stack(lost: Stack) -> Iterator[Stack]:
    try:
        yield lost
    finally:
        lost.stop_workers()


class Follower:
    """A client following an interaction's stream in a thread, keeping every event."""

    def __init__(self, url: str, key: str, path: str, body: dict[str, Any] | None = None) -> None:
        self.events: list[dict[str, Any]] = []
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._follow, args=(url, key, path, body), daemon=True)
        self.thread.start()

    def _follow(self, url: str, key: str, path: str, body: dict[str, Any] | None) -> None:
        try:
            with httpx.Client(base_url=url, headers={"x-goog-api-key": key}, timeout=60) as http:
                method, params = ("POST", None) if body is not None else ("GET", {"stream": "true"})
                with http.stream(method, path, json=body, params=params) as response:
                    for event in events(response):
                        self.events.append(event)
        except httpx.HTTPError as exc:
            self.error = exc

    def deltas(self) -> int:
        return sum(1 for e in self.events if e["event_type"] == "step.delta")

    def text(self) -> str:
        return "".join(e["delta"]["text"] for e in self.events if e["event_type"] == "step.delta")

    def join(self, timeout: float = 30) -> None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the stream never ended"


def _record(url: str, key: str, interaction_id: str) -> dict[str, Any]:
    with httpx.Client(base_url=url, headers={"x-goog-api-key": key}, timeout=30) as http:
        got: dict[str, Any] = http.get(f"/v1beta/interactions/{interaction_id}").json()
        return got


def _text(record: dict[str, Any]) -> str:
    return "".join(
        item.get("text", "")
        for step in record.get("steps", [])
        if step["type"] == "model_output"
        for item in step.get("content", [])
    )


def _replayed(url: str, key: str, interaction_id: str) -> Follower:
    replay = Follower(url, key, f"/v1beta/interactions/{interaction_id}")
    replay.join()
    return replay


def _attempts(stack: Stack, key: str, interaction_id: str) -> int:
    return int(_field(stack, key, interaction_id, "attempts") or 0)


def _field(stack: Stack, key: str, interaction_id: str, name: str) -> str | None:
    """A field of the record's hash, as Redis holds it (what a stopped web process cannot answer)."""
    with sync_redis.Redis.from_url(stack.redis_url) as client:
        value = client.hget(f"ix:{{{tenant_of(key)}}}:{interaction_id}", name)
    return value.decode() if isinstance(value, bytes) else None


def _listed(url: str, key: str) -> list[dict[str, Any]]:
    """The interactions a tenant has on the server at `url`, newest first (our list extension)."""
    reply = httpx.get(f"{url}/v1beta/interactions", headers={"x-goog-api-key": key}, timeout=10)
    assert reply.status_code == 200, reply.text
    found: list[dict[str, Any]] = reply.json().get("interactions", [])
    return found


def _stored_status(stack: Stack, key: str, interaction_id: str) -> str:
    """The record's status as Redis holds it (what a stopped web process cannot answer)."""
    with sync_redis.Redis.from_url(stack.redis_url) as client:
        status = client.hget(f"ix:{{{tenant_of(key)}}}:{interaction_id}", "status")
    return status.decode() if isinstance(status, bytes) else ""


def _create(url: str, key: str, body: dict[str, Any]) -> str:
    with httpx.Client(base_url=url, headers={"x-goog-api-key": key}, timeout=30) as http:
        reply = http.post("/v1beta/interactions", json=body)
        assert reply.status_code == 200, reply.text
        interaction_id: str = reply.json()["id"]
        return interaction_id


def test_a_worker_killed_mid_answer_fails_with_what_its_follower_saw(stack: Stack) -> None:
    url, key = stack.servers[0][1], new_key()
    worker = stack.start_worker()
    interaction_id = _create(url, key, {"model": "echo-slow", "input": WORDS, "background": True})
    follower = Follower(url, key, f"/v1beta/interactions/{interaction_id}")
    until(lambda: follower.deltas() >= 5, timeout=20)
    worker.signal(signal.SIGKILL)
    worker.wait(5)
    stack.start_worker()  # a worker that could re-run it: it must not
    follower.join()
    assert follower.events[-1]["event_type"] == "error"
    assert follower.events[-1]["error"]["code"] == "worker_lost"
    record = _record(url, key, interaction_id)
    assert record["status"] == "failed" and record["errors"][0]["code"] == "worker_lost"
    # the follower, the record and a replay from the start hold the same text: the part made before
    assert _text(record) == follower.text() == _replayed(url, key, interaction_id).text()
    assert 5 <= len(follower.text().split()) < 80
    assert sum(1 for e in follower.events if e["event_type"] == "step.start") == 1


def test_a_worker_killed_before_any_output_is_re_run(stack: Stack, fake: FakeServer) -> None:
    url, key = stack.servers[0][1], new_key()
    fake.add(openai_text_script("too late", first_chunk_delay=3.0), openai_text_script("the answer"))
    asked = len(fake.requests)
    worker = stack.start_worker()
    interaction_id = _create(url, key, {"model": "slow-model", "input": "hi", "background": True})
    # the upstream has the request and has not answered yet
    until(lambda: len(fake.requests) == asked + 1, timeout=10)
    worker.signal(signal.SIGKILL)
    worker.wait(5)
    stack.start_worker()
    until(lambda: _record(url, key, interaction_id)["status"] == "completed", timeout=20)
    replay = _replayed(url, key, interaction_id)
    assert replay.text() == "the answer" == _text(_record(url, key, interaction_id))
    assert sum(1 for e in replay.events if e["event_type"] == "step.start") == 1


def test_a_worker_killed_while_it_follows_a_remote_run_is_followed_again_not_run_again(
    stack: Stack, back: ThreadedApp
) -> None:
    """A Google agent's turn is a remote run: the worker that started it dies (before its first word, a
    second away), the next worker follows the same remote run to its end; the back made one."""
    url, key = stack.servers[0][1], new_key()
    made_before = len(_listed(back.url, BACK_KEY))
    worker = stack.start_worker(IX_LOST_BACK_KEY=BACK_KEY)  # the route's key variable (the web's has it)
    interaction_id = _create(url, key, {"agent": "remote-agent-1", "input": "one two", "background": True})
    remote_id = until(lambda: _field(stack, key, interaction_id, "rid"), timeout=10)
    worker.signal(signal.SIGKILL)
    worker.wait(5)
    stack.start_worker(IX_LOST_BACK_KEY=BACK_KEY)
    until(lambda: _record(url, key, interaction_id)["status"] == "completed", timeout=30)
    assert _text(_record(url, key, interaction_id)) == "one two"
    assert _attempts(stack, key, interaction_id) == 2
    made = _listed(back.url, BACK_KEY)
    assert len(made) == made_before + 1 and made[0]["id"] == remote_id, "resumed, not made again"
    assert made[0]["status"] == "completed"


def test_a_worker_killed_mid_answer_of_a_remote_run_is_followed_again_from_where_its_clients_are(
    stack: Stack, back: ThreadedApp
) -> None:
    """Killed after its clients saw output, a remote run is not failed (as a run of ours is): the next
    worker reads the same remote run again and its clients get each word once, the record all of them."""
    url, key = stack.servers[0][1], new_key()
    made_before = len(_listed(back.url, BACK_KEY))
    worker = stack.start_worker(IX_LOST_BACK_KEY=BACK_KEY)
    interaction_id = _create(url, key, {"agent": "remote-agent-1", "input": "a b c d", "background": True})
    follower = Follower(url, key, f"/v1beta/interactions/{interaction_id}")
    until(lambda: follower.deltas() >= 1, timeout=20)
    worker.signal(signal.SIGKILL)
    worker.wait(5)
    stack.start_worker(IX_LOST_BACK_KEY=BACK_KEY)
    follower.join()
    assert follower.events[-1]["event_type"] == "interaction.completed", follower.events[-1]
    assert follower.text() == "a b c d" == _text(_record(url, key, interaction_id))
    assert _record(url, key, interaction_id)["status"] == "completed"
    assert _replayed(url, key, interaction_id).text() == "a b c d"
    assert len(_listed(back.url, BACK_KEY)) == made_before + 1, "resumed, not made again"


def test_a_run_whose_workers_keep_dying_before_output_fails_with_a_clear_error(
    stack: Stack, fake: FakeServer
) -> None:
    url, key = stack.servers[0][1], new_key()
    slow = openai_text_script("never", first_chunk_delay=5.0)
    fake.add(slow, slow)
    asked = len(fake.requests)
    interaction_id = _create(url, key, {"model": "slow-model", "input": "hi", "background": True})
    for attempt in (1, 2):
        worker = stack.start_worker()
        until(lambda n=attempt: len(fake.requests) == asked + n, timeout=20)  # type: ignore[misc]
        worker.signal(signal.SIGKILL)
        worker.wait(5)
    # no attempts left: the reaper (in the web process) fails it
    until(lambda: _record(url, key, interaction_id)["status"] == "failed", timeout=20)
    record = _record(url, key, interaction_id)
    assert record["errors"][0]["code"] == "worker_lost" and "lost" in record["errors"][0]["message"]


def test_sigterm_finishes_short_runs_and_ends_long_ones_with_their_output(stack: Stack) -> None:
    url, key = stack.servers[0][1], new_key()
    worker = stack.start_worker()
    short = _create(url, key, {"model": "echo-slow", "input": "s1 s2 s3 s4 s5 s6", "background": True})
    long = _create(url, key, {"model": "echo-slow", "input": WORDS + " " + WORDS, "background": True})
    follower = Follower(url, key, f"/v1beta/interactions/{long}")
    until(lambda: follower.deltas() >= 2, timeout=20)
    worker.signal(signal.SIGTERM)
    assert worker.wait(15) == 0
    follower.join()
    assert _record(url, key, short)["status"] == "completed"
    # the long one outlived the grace period: it ends failed, keeping what its follower saw
    record = _record(url, key, long)
    assert record["status"] == "failed" and record["errors"][0]["code"] == "worker_stopped"
    assert follower.events[-1]["event_type"] == "error"
    assert _text(record) == follower.text() == _replayed(url, key, long).text()


def test_a_stalled_web_process_ends_its_stream_as_the_record_says(stack: Stack) -> None:
    """The web process stops past its lease (LEASE); the worker's reaper fails the run; when the web
    process goes on, its client's stream ends with the record's error, holding the record's text."""
    url, key = stack.servers[0][1], new_key()
    stack.start_worker()
    proc = stack.servers[0][0]
    body = {"model": "echo-slow", "input": WORDS, "stream": True}
    follower = Follower(url, key, "/v1beta/interactions", body)
    until(lambda: follower.deltas() >= 5, timeout=20)
    interaction_id = follower.events[0]["interaction"]["id"]
    proc.signal(signal.SIGSTOP)
    try:
        # until the worker's reaper has failed the run (under the whole suite's load, two leases were
        # once not enough for it to look)
        until(lambda: _stored_status(stack, key, interaction_id) == "failed", timeout=6 * LEASE)
    finally:
        proc.signal(signal.SIGCONT)
    follower.join()
    assert follower.events[-1]["event_type"] == "error"
    record = _record(url, key, interaction_id)
    assert (
        record["status"] == "failed" and follower.events[-1]["error"]["code"] == record["errors"][0]["code"]
    )
    assert _text(record) == follower.text() == _replayed(url, key, interaction_id).text()
    assert follower.text()


def test_a_killed_web_process_leaves_its_partial_output_in_the_failed_record(stack: Stack) -> None:
    key = new_key()
    stack.start_worker()
    doomed_url = stack.start_server()
    doomed = stack.servers[-1][0]
    body = {"model": "echo-slow", "input": WORDS, "stream": True}
    follower = Follower(doomed_url, key, "/v1beta/interactions", body)
    until(lambda: follower.deltas() >= 5, timeout=20)
    interaction_id = follower.events[0]["interaction"]["id"]
    doomed.signal(signal.SIGKILL)
    follower.join()
    url = stack.servers[0][1]
    until(lambda: _record(url, key, interaction_id)["status"] == "failed", timeout=20)
    record = _record(url, key, interaction_id)
    assert record["errors"][0]["code"] == "worker_lost"
    # the record holds what the log holds, which is all the client saw and perhaps a little more
    assert _text(record) == _replayed(url, key, interaction_id).text()
    assert _text(record).startswith(follower.text()) and len(follower.text().split()) >= 5


def test_usage_totals_are_the_stored_interactions_through_cancels_and_killed_workers(stack: Stack) -> None:
    """500 background runs, some cancelled, their workers SIGKILLed twice while they run (runs re-run or
    failed, settled by runs or by the reaper): the tenant's usage totals (GET /v1beta/usage) are the sum
    of what its stored interactions hold, each counted once by the status it ended with."""
    url, key = stack.servers[0][1], new_key()
    rng = random.Random(7)
    worker = stack.start_worker()
    ids: list[str] = []
    with httpx.Client(base_url=url, headers={"x-goog-api-key": key}, timeout=30) as http:
        for n in range(500):
            slow = n % 5 == 0  # 0.3 s of echo-slow: in flight when a worker is killed
            body = {"model": "echo-slow" if slow else "echo", "input": " ".join(["w"] * rng.randint(1, 6))}
            reply = http.post("/v1beta/interactions", json={**body, "background": True})
            assert reply.status_code == 200, reply.text
            ids.append(reply.json()["id"])
            if rng.random() < 0.15:
                http.post(f"/v1beta/interactions/{rng.choice(ids[-3:])}/cancel")
            if n in (150, 350):
                worker.signal(signal.SIGKILL)
                worker.wait(5)
                worker = stack.start_worker()
        until(lambda: all(s not in _RUNNING for s in _statuses(stack, key, ids)), timeout=60, interval=0.2)
        records = [http.get(f"/v1beta/interactions/{i}").json() for i in ids]
        report = http.get("/v1beta/usage").json()
    total = report["total"]
    ended = Counter(record["status"] for record in records)
    assert total["interactions"] == dict(ended)
    assert len(ended) >= 3, ended  # completed, cancelled, and runs the killed workers left: seen
    for name, field in (("input_tokens", "total_input_tokens"), ("output_tokens", "total_output_tokens")):
        assert total[name] == sum((record.get("usage") or {}).get(field, 0) for record in records), name


_RUNNING = ("queued", "in_progress", "cancelling", "")


def _statuses(stack: Stack, key: str, ids: list[str]) -> list[str]:
    with sync_redis.Redis.from_url(stack.redis_url) as client:
        pipe = client.pipeline(transaction=False)
        for interaction_id in ids:
            pipe.hget(f"ix:{{{tenant_of(key)}}}:{interaction_id}", "status")
        return [value.decode() if isinstance(value, bytes) else "" for value in pipe.execute()]
