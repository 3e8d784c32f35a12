"""No single request starves its web process: a very large input, foreground and streamed, while another
client's small requests to the same (single) web process keep answering promptly, and the large one ends
as `[echo] max_output_words` says (status `incomplete`, the first words of the input)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from .support import TOPOLOGIES, new_key, running_stack

T = TypeVar("T")

PATH = "/v1beta/interactions"
#: not the default (65,536), so that the test shows the setting reaches the models
BUDGET = 50_000
#: about 5 MB: a million words, twenty times the budget
INPUT_WORDS = 1_000_000
#: what a small request may take while the large one runs (generous: the machine is shared)
PROMPT_SECONDS = 1.0


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # as `make run` starts it: one web process with the worker inside it
    with running_stack(
        Path(tmp_path_factory.mktemp("starvation")),
        config={"echo": {"max_output_words": BUDGET}},
        topology=TOPOLOGIES["make-run"],
    ) as stack:
        yield stack.servers[0][1]


def large_body(stream: bool) -> dict[str, Any]:
    words = [f"w{i % 1000}" for i in range(INPUT_WORDS)]
    return {"model": "echo", "input": " ".join(words), "stream": stream}


def expected_text() -> str:
    return " ".join(f"w{i % 1000}" for i in range(BUDGET))


class Prober:
    """Another client's small requests (a create, then a get of it), one after the other, each timed."""

    def __init__(self, base_url: str) -> None:
        self.client = httpx.Client(
            base_url=base_url, headers={"x-goog-api-key": new_key()}, timeout=PROMPT_SECONDS * 5
        )
        #: (start, seconds) of each request
        self.timings: list[tuple[float, float]] = []

    def probe(self) -> None:
        started = time.monotonic()
        try:
            created = self.client.post(PATH, json={"model": "echo", "input": "are you there"})
            assert created.status_code == 200, created.text
            self.timings.append((started, time.monotonic() - started))
            started = time.monotonic()
            got = self.client.get(f"{PATH}/{created.json()['id']}")
            assert got.status_code == 200, got.text
        except httpx.TimeoutException:
            pass  # timed below, as what it is: a request that did not answer in time
        self.timings.append((started, time.monotonic() - started))

    def run_while(self, large: Future[T], within: float) -> None:
        deadline = time.monotonic() + within
        while not large.done() and time.monotonic() < deadline:
            self.probe()
            if any(seconds > PROMPT_SECONDS for _start, seconds in self.timings):
                return  # one is enough to fail
            time.sleep(0.02)


def in_thread(call: Callable[[], T]) -> Future[T]:
    """`call` in a daemon thread: a test that fails does not wait for it (the stack's stop ends it)."""
    future: Future[T] = Future()

    def target() -> None:
        try:
            future.set_result(call())
        except BaseException as exc:
            future.set_exception(exc)

    threading.Thread(target=target, daemon=True).start()
    return future


def with_prober(base_url: str, large: Callable[[], T]) -> T:
    """Run `large` while probing; return its result once every probe made meanwhile was prompt."""
    prober = Prober(base_url)
    with prober.client:
        prober.probe()  # the server is warm before the clock matters
        prober.timings.clear()
        began = time.monotonic()
        future = in_thread(large)
        prober.run_while(future, within=90)
        slow = [round(seconds, 3) for _start, seconds in prober.timings if seconds > PROMPT_SECONDS]
        assert not slow, f"small requests took {slow} s while the large one ran"
        assert any(start >= began for start, _seconds in prober.timings), "no small request overlapped"
        return future.result(timeout=60)


def test_a_large_foreground_input_starves_no_one(base_url: str) -> None:
    body = large_body(stream=False)

    def large() -> httpx.Response:
        with httpx.Client(base_url=base_url, headers={"x-goog-api-key": new_key()}, timeout=120) as client:
            return client.post(PATH, json=body)

    response = with_prober(base_url, large)
    assert response.status_code == 200, response.text[:500]
    interaction = response.json()
    assert interaction["status"] == "incomplete"
    assert interaction["usage"]["total_input_tokens"] == INPUT_WORDS
    assert interaction["usage"]["total_output_tokens"] == BUDGET
    [output] = [s for s in interaction["steps"] if s["type"] == "model_output"]
    assert output["content"] == [{"type": "text", "text": expected_text()}]


def test_a_large_streamed_input_starves_no_one(base_url: str) -> None:
    body = large_body(stream=True)

    def large() -> bytes:
        # the bytes are parsed afterwards: parsing here would compete with the prober for the GIL
        with (
            httpx.Client(base_url=base_url, headers={"x-goog-api-key": new_key()}, timeout=120) as client,
            client.stream("POST", PATH, json=body) as response,
        ):
            assert response.status_code == 200
            return b"".join(response.iter_raw())

    stream = with_prober(base_url, large)
    assert stream.count(b"event: step.delta\n") == BUDGET
    last = stream.rstrip(b"\n").rsplit(b"\n\n", 1)[-1]
    assert last.startswith(b"event: interaction.completed\n"), last[:200]
    completed = httpx.Response(200, content=last.split(b"data: ", 1)[1]).json()["interaction"]
    assert completed["status"] == "incomplete"
    assert completed["usage"]["total_output_tokens"] == BUDGET
    [output] = [s for s in completed["steps"] if s["type"] == "model_output"]
    assert output["content"] == [{"type": "text", "text": expected_text()}]
