"""The interactions a stateful fake of Google's Interactions API holds (google_remote.py), and how it "runs"
them on its own clock: each one's numbered event log (`evt_1`, ...; the ids `last_event_id` resumes
after), the steps a poll shows, and its status, as the official SDK's types have them.

A run says back the input's last user text, a word at a time (`Behaviour.word_seconds` apart: a slow
agent), after the built-in tool steps and thought a behaviour asks for; it ends `completed`, or `failed`
with an `error` event, or `cancelled` (its output so far kept).
"""

from __future__ import annotations

import asyncio
import copy
import time
from dataclasses import dataclass
from typing import Any

from . import google_interactions as gi

_RUNNING = ("queued", "in_progress")
#: the content types of an input (a list of them is one user turn); any other `type` is a step's
_CONTENT_TYPES = frozenset({"text", "image", "audio", "document", "video"})
SEARCH_SIGNATURE = "c2VhcmNoLXNpZw=="
THOUGHT_SIGNATURE = "dGhvdWdodC1zaWc="


@dataclass(frozen=True)
class Behaviour:
    """How the fake runs an interaction created while it is set (`GoogleFake.behaviour`)."""

    #: the wait before each word of the answer
    word_seconds: float = 0.0
    #: a `google_search_call` step and its `google_search_result`, before anything else
    search: bool = False
    #: a `thought` step (a summary, a signature) before the answer
    thought: bool = False
    #: (code, message): after its words, an `error` event ends it `failed`
    error: tuple[str, str] | None = None


class Remote:
    """One interaction: what it was asked, its event log, its output steps, its status."""

    def __init__(self, interaction_id: str, body: dict[str, Any], behaviour: Behaviour) -> None:
        self.id = interaction_id
        self.body = body
        self.behaviour = behaviour
        self.name_field = "agent" if body.get("agent") else "model"
        self.background = bool(body.get("background"))
        self.stored = body.get("store", True) is not False
        self.status = "in_progress"
        self.input = input_steps(body.get("input"))
        self.output: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.errors: list[dict[str, str]] | None = None
        self.created = _now()
        self.updated = self.created
        #: SSE responses served of it (its create's, if streamed, and each stream GET), polls, cancels
        self.streams = 0
        self.polls = 0
        self.cancels = 0
        #: when its first cancel arrived (time.monotonic(), as the test process reads it)
        self.cancelled_at: float | None = None
        self.deleted = False
        self.task: asyncio.Task[None] | None = None
        self._open: int | None = None
        self._change: asyncio.Future[None] | None = None
        self.emit({"event_type": "interaction.created", "interaction": self.summary()})

    @property
    def ended(self) -> bool:
        return self.status not in _RUNNING

    def text(self) -> str:
        """The text of its output (what a client's `output_text` would be)."""
        return "".join(
            item.get("text", "")
            for step in self.output
            if step["type"] == "model_output"
            for item in step.get("content", [])
        )

    # -- what it answers ---------------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """The partial interaction the lifecycle events carry."""
        found: dict[str, Any] = {"id": self.id, "status": self.status, "object": "interaction"}
        found[self.name_field] = self.body[self.name_field]
        found |= {"created": self.created, "updated": self.updated}
        if self.ended:
            found["usage"] = self.usage()
        return found

    def whole(self, *, with_input: bool = True) -> dict[str, Any]:
        """As a GET shows it (its input steps, then its output), or a create (its output only)."""
        found = self.summary()
        found["steps"] = copy.deepcopy([*self.input, *self.output] if with_input else self.output)
        if self.errors:
            found["errors"] = self.errors
        return found

    def usage(self) -> dict[str, int]:
        said = len(self.text().split())
        asked = len(user_text(self.input).split())
        return {"total_input_tokens": asked, "total_output_tokens": said, "total_tokens": asked + said}

    # -- its event log -----------------------------------------------------------------------------------

    def emit(self, event: dict[str, Any]) -> None:
        self.events.append({**event, "event_id": f"evt_{len(self.events) + 1}"})
        self.updated = _now()
        self.changed()

    def changed(self) -> None:
        """Wake whoever waits for more of it (a stream following it live)."""
        if self._change is not None and not self._change.done():
            self._change.set_result(None)
        self._change = None

    def next_change(self) -> asyncio.Future[None]:
        if self._change is None:
            self._change = asyncio.get_running_loop().create_future()
        return self._change

    def open(self, step: dict[str, Any], streamed: dict[str, Any] | None = None) -> None:
        """A step begins: `streamed` is what its `step.start` says of it (the whole step by default)."""
        self._open = len(self.output)
        self.output.append(copy.deepcopy(step))
        self.emit(gi.start(self._open, streamed if streamed is not None else step))

    def add(self, delta: dict[str, Any]) -> None:
        """A delta of the open step, applied to it as a poll would show it."""
        assert self._open is not None
        step = self.output[self._open]
        if delta["type"] == "text":
            content = step.setdefault("content", [])
            if content:
                content[0]["text"] += delta["text"]
            else:
                content.append({"type": "text", "text": delta["text"]})
        elif delta["type"] == "thought_summary":
            step.setdefault("summary", []).append(delta["content"])
        elif delta["type"] == "thought_signature":
            step["signature"] = delta["signature"]
        self.emit(gi.delta(self._open, delta))

    def close(self) -> None:
        if self._open is not None:
            self.emit(gi.stop(self._open))
            self._open = None

    def end(self, status: str) -> None:
        """Its last events: the open step closed, its status, `interaction.completed` with its usage."""
        self.close()
        self.status = status
        self.report()
        self.emit({"event_type": "interaction.completed", "interaction": self.summary()})

    def report(self) -> None:
        self.emit(
            {"event_type": "interaction.status_update", "interaction_id": self.id, "status": self.status}
        )

    def cancel(self) -> None:
        """Stopped where it is, its output so far kept."""
        if self.task is not None:
            self.task.cancel()
        self.end("cancelled")

    def delete(self) -> None:
        """Gone: whoever follows it is cut off. Its run, if it has not ended, goes on unseen: Google's
        delete does not cancel (its docs), so a client must cancel first."""
        self.deleted = True
        self.changed()

    def fail(self, code: str, message: str) -> None:
        self.close()
        self.status = "failed"
        self.errors = [{"code": code, "message": message}]
        self.emit({"event_type": "error", "error": {"code": code, "message": message}})


async def run(remote: Remote) -> None:
    """The fake's clock: its steps, a word every `word_seconds`, then its end. Cancelled (a cancel, the
    fake's stop), it stops where it is: a cancel writes its end."""
    behaviour = remote.behaviour
    remote.report()
    said = user_text(remote.input)
    if behaviour.search:
        call_id = f"gs_{remote.id}"
        call = {"type": "google_search_call", "id": call_id, "arguments": {"queries": [said]}}
        remote.open({**call, "signature": SEARCH_SIGNATURE})
        remote.close()
        result = [{"search_suggestions": f"<div>{said}</div>"}]
        remote.open({"type": "google_search_result", "call_id": call_id, "result": result})
        remote.close()
    if behaviour.thought:
        remote.open({"type": "thought"})
        remote.add({"type": "thought_summary", "content": {"type": "text", "text": "Saying it back."}})
        remote.add({"type": "thought_signature", "signature": THOUGHT_SIGNATURE})
        remote.close()
    remote.open({"type": "model_output", "content": []}, {"type": "model_output"})
    for index, word in enumerate(said.split(" ") if said else []):
        if behaviour.word_seconds:
            await asyncio.sleep(behaviour.word_seconds)
        remote.add({"type": "text", "text": word if index == 0 else " " + word})
    if behaviour.error is not None:
        remote.fail(*behaviour.error)
    else:
        remote.end("completed")


def input_steps(given: Any) -> list[dict[str, Any]]:
    """A create's `input` as the steps of its timeline (the SDK's forms: a string, content, steps)."""
    if given is None:
        return []
    if isinstance(given, str):
        return [{"type": "user_input", "content": [{"type": "text", "text": given}]}]
    items = given if isinstance(given, list) else [given]
    if all(isinstance(item, dict) and item.get("type", "text") not in _CONTENT_TYPES for item in items):
        return copy.deepcopy(items)
    return [{"type": "user_input", "content": copy.deepcopy(items)}]


def user_text(steps: list[dict[str, Any]]) -> str:
    """The text of the last `user_input` step."""
    for step in reversed(steps):
        if step["type"] == "user_input":
            return "".join(c.get("text", "") for c in step.get("content", []) if c.get("type") == "text")
    return ""


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
