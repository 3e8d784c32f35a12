"""Traffic for a failover test, on loopback and bounded in time: threads creating interactions, and a
reader following one stream, resuming it after every cut, each recording what it saw."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx

from ..sse import events

PATH = "/v1beta/interactions"
#: a request that takes longer than this has hung (every Redis command is bounded by 2 s)
REQUEST_TIMEOUT = 10.0
TERMINAL = ("interaction.completed", "error")


class Creator(threading.Thread):
    """Creates interactions one after the other until stopped: the ids acknowledged (200) and every
    failure (status or exception, how long it took)."""

    def __init__(self, base_url: str, api_key: str, body: dict[str, Any], pause: float = 0.0) -> None:
        super().__init__(daemon=True)
        self.client = httpx.Client(
            base_url=base_url, headers={"x-goog-api-key": api_key}, timeout=REQUEST_TIMEOUT
        )
        self.body, self.pause = body, pause
        self.acked: list[tuple[float, str]] = []
        self.failed: list[tuple[float, str, float]] = []
        self.stopping = threading.Event()

    def next_body(self) -> dict[str, Any]:
        return self.body

    def send(self) -> httpx.Response:
        return self.client.post(PATH, json=self.next_body())

    def run(self) -> None:
        while not self.stopping.is_set():
            started = time.monotonic()
            try:
                reply = self.send()
                outcome = str(reply.status_code)
                if reply.status_code == 200:
                    self.acked.append((time.monotonic(), reply.json()["id"]))
            except httpx.HTTPError as exc:
                outcome = type(exc).__name__
            if outcome != "200":
                self.failed.append((started, outcome, time.monotonic() - started))
            time.sleep(self.pause)

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=REQUEST_TIMEOUT + 5)
        self.client.close()


class Reader(Creator):
    """Reads one interaction again and again until stopped: its `acked` are the reads answered 200."""

    def __init__(self, base_url: str, api_key: str, interaction_id: str) -> None:
        super().__init__(base_url, api_key, {}, pause=0.02)
        self.item = f"{PATH}/{interaction_id}"

    def send(self) -> httpx.Response:
        return self.client.get(self.item)


class Follower(threading.Thread):
    """Follows one interaction's stream to its end, resuming with last_event_id after every cut: the event
    ids in the order seen, and how many times it resumed."""

    def __init__(self, base_url: str, api_key: str, interaction_id: str, within: float) -> None:
        super().__init__(daemon=True)
        self.client = httpx.Client(
            base_url=base_url, headers={"x-goog-api-key": api_key}, timeout=REQUEST_TIMEOUT
        )
        self.item = f"{PATH}/{interaction_id}"
        self.deadline = time.monotonic() + within
        self.seen: list[str] = []
        self.last_type = ""
        self.resumed = 0
        self.cuts: list[dict[str, Any]] = []

    def run(self) -> None:
        while self.last_type not in TERMINAL and time.monotonic() < self.deadline:
            params = {"stream": "true", **({"last_event_id": self.seen[-1]} if self.seen else {})}
            try:
                with self.client.stream("GET", self.item, params=params) as response:
                    if response.status_code != 200:
                        time.sleep(0.2)
                        continue
                    for event in events(response):
                        if "event_id" not in event:
                            # the server's word that the stream is cut (Redis went away): resume it
                            self.cuts.append(event)
                            break
                        self.seen.append(event["event_id"])
                        self.last_type = event["event_type"]
            except httpx.HTTPError:
                time.sleep(0.2)
            if self.last_type not in TERMINAL:
                self.resumed += 1
        self.client.close()


class Chainer(Creator):
    """A conversation continued turn after turn: each request continues the last acknowledged one."""

    def __init__(self, base_url: str, api_key: str) -> None:
        super().__init__(base_url, api_key, {"model": "echo", "input": "next"})

    def next_body(self) -> dict[str, Any]:
        return {**self.body, **({"previous_interaction_id": self.acked[-1][1]} if self.acked else {})}


def outcomes(creators: list[Creator]) -> tuple[list[tuple[float, str, float]], list[str]]:
    """Every failure (start, outcome, seconds) and every acknowledged id of the creators, once stopped;
    asserts that each failure was a clean 503, and soon (never a hang or a broken connection)."""
    failures = [failure for creator in creators for failure in creator.failed]
    acked = [interaction_id for creator in creators for _, interaction_id in creator.acked]
    assert {outcome for _, outcome, _ in failures} <= {"503"}, failures
    assert max((took for _, _, took in failures), default=0) < 5.0, failures
    return failures, acked


class Answers:
    """Background runs of `echo-slow` whose answers are known (it echoes its input, a word at a time): what
    each interaction should end with, and what it ended with."""

    def __init__(self, base_url: str, api_key: str) -> None:
        self.client = httpx.Client(
            base_url=base_url, headers={"x-goog-api-key": api_key}, timeout=REQUEST_TIMEOUT
        )
        #: interaction id -> its whole answer
        self.expected: dict[str, str] = {}

    def create(self, words: int, label: str) -> str:
        """A background run answering `words` distinct words (so that a lost or repeated one shows)."""
        text = " ".join(f"{label}w{n}" for n in range(words))
        reply = self.client.post(PATH, json={"model": "echo-slow", "input": text, "background": True})
        assert reply.status_code == 200, reply.text
        interaction_id: str = reply.json()["id"]
        self.expected[interaction_id] = text
        return interaction_id

    def statuses(self) -> dict[str, str]:
        """Each run's status; "unknown" while a get answers 503 (Redis failing over: nothing to read yet)."""
        found = {}
        for interaction_id in self.expected:
            reply = self.client.get(f"{PATH}/{interaction_id}")
            assert reply.status_code in (200, 503), reply.text
            found[interaction_id] = reply.json()["status"] if reply.status_code == 200 else "unknown"
        return found

    def running(self) -> bool:
        """Whether every run has started (and none ended yet: the fault is to come before their ends)."""
        statuses = set(self.statuses().values())
        assert not statuses & {"completed", "failed", "cancelled", "incomplete"}, statuses
        return statuses == {"in_progress"}

    def ended(self) -> bool:
        return not {"queued", "in_progress", "unknown"} & set(self.statuses().values())

    def wrong(self) -> list[str]:
        """Each run that did not end `completed` with its whole answer: its status, how much of the answer
        it kept, the error it stored."""
        found = []
        for interaction_id, text in self.expected.items():
            stored = self.client.get(f"{PATH}/{interaction_id}").json()
            kept = answer_of(stored)
            if stored["status"] != "completed" or kept != text:
                error = [e.get("message", "") for e in stored.get("errors") or []]
                found.append(
                    f"{interaction_id}: {stored['status']}, {len(kept.split())} of {len(text.split())} "
                    f"words{' (not a prefix)' if not text.startswith(kept) else ''} {error}"
                )
        return found

    def close(self) -> None:
        self.client.close()


def answer_of(stored: dict[str, Any]) -> str:
    """The text of an interaction's model output, as its JSON carries it."""
    return "".join(
        content.get("text", "")
        for step in stored.get("steps") or []
        if step.get("type") == "model_output"
        for content in step.get("content") or []
        if content.get("type") == "text"
    )
