"""A fake of Google's Interactions API that keeps its interactions and runs them (google_runs.py), speaking
the wire as the official SDK's types have it:

    POST {base}/v1beta/interactions, or Vertex's {base}/v1beta1/projects/{p}/locations/{l}/interactions
        a create, of a model or an agent; background (kept: `store` may not be false) or not; streamed
        (its events from `evt_1`, following it live to its end, then `data: [DONE]`) or answered whole (a
        background one at once, `in_progress`; another once it has ended)
    GET .../interactions/{id}                   the interaction as it is (a poll): its input steps, output
    GET ...?stream=true[&last_event_id=evt_N]   its events after N (all without), then live to its end
    POST .../interactions/{id}/cancel           `cancelled`, its output so far kept; 400 once it has ended
    DELETE .../interactions/{id}                gone: 404 afterwards; a run not ended goes on unseen
                                                (Google's delete does not cancel)

A script queued as for FakeServer (`add`) answers the next request instead, whatever it is: the scripted
model turns, Google's errors and its 429s with RetryInfo. Knobs, reset between tests:

    behaviour           how the next creates run: a slow agent, built-in tool steps, a thought, an error
    cuts                each SSE response takes the next number K and is closed after K events (a dropped
                        connection)
    stream_get_errors   each stream GET takes the next of these scripts as its answer (a 429, a 503)
    poll_errors         each poll, likewise
    refuse_stream_gets  a 405 to every stream GET: the client must poll

`counts` keeps what was served: `creates`, `streams` (SSE responses: a streamed create's and each stream
GET's), `polls`, `cancels`, `deletes`, `refused` (stream GETs answered with an error).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections import Counter, deque
from typing import Any
from urllib.parse import parse_qs

from .gemini import gemini_error
from .google_runs import Behaviour, Remote, run
from .http import FakeServer, RecordedRequest, Script, sse

_PATH = re.compile(
    r"^/v1\w*(?:/projects/[^/]+/locations/[^/]+)?/interactions(?:/(?P<id>[\w-]+)(?P<cancel>[:/]cancel)?)?$"
)
_EVENT_ID = re.compile(r"evt_(\d+)")
#: a stream to serve: the interaction, and how many of its events come before it
Follow = tuple[Remote, int]


class GoogleFake(FakeServer):
    def __init__(self) -> None:
        super().__init__()
        #: the stored interactions by id (a `store: false` one is never kept)
        self.interactions: dict[str, Remote] = {}
        #: those created since the last reset, deleted or not
        self.created: list[Remote] = []
        self.counts: Counter[str] = Counter()
        self.behaviour = Behaviour()
        self.cuts: deque[int] = deque()
        self.stream_get_errors: deque[Script] = deque()
        self.poll_errors: deque[Script] = deque()
        self.refuse_stream_gets = False
        self._numbers = itertools.count(1)
        self._runs: set[asyncio.Task[None]] = set()

    def reset(self) -> None:
        """Between tests: no scripts, requests, counts or knobs (an interaction still running goes on)."""
        self.scripts.clear()
        self.requests.clear()
        self.created.clear()
        self.counts.clear()
        self.behaviour = Behaviour()
        self.cuts.clear()
        self.stream_get_errors.clear()
        self.poll_errors.clear()
        self.refuse_stream_gets = False

    def only(self) -> Remote:
        """The one interaction created since the last reset."""
        assert len(self.created) == 1, [remote.id for remote in self.created]
        return self.created[0]

    async def stop(self) -> None:
        for task in list(self._runs):
            task.cancel()
        await super().stop()

    async def _answer(
        self, request: RecordedRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        if self.scripts:
            await super()._answer(request, reader, writer)
            return
        answer = await self._handle(request)
        if isinstance(answer, Script):
            await self._respond(answer, reader, writer)
        else:
            await self._stream(*answer, reader, writer)

    async def _handle(self, request: RecordedRequest) -> Script | Follow:
        found = _PATH.match(request.path)
        if found is None:
            return gemini_error(404, f"Nothing at {request.path}", "NOT_FOUND")
        if found["id"] is None:
            return await self._create(request) if request.method == "POST" else _not_allowed(request)
        remote = self.interactions.get(found["id"])
        if remote is None:
            return gemini_error(404, f"Interaction {found['id']} was not found", "NOT_FOUND")
        if found["cancel"]:
            return self._cancel(request, remote) if request.method == "POST" else _not_allowed(request)
        if request.method == "DELETE":
            self.counts["deletes"] += 1
            del self.interactions[remote.id]
            remote.delete()
            return _json({})
        return self._get(request, remote) if request.method == "GET" else _not_allowed(request)

    async def _create(self, request: RecordedRequest) -> Script | Follow:
        body = request.json()
        refused = _refused(body)
        if refused is not None:
            return gemini_error(400, refused, "INVALID_ARGUMENT")
        self.counts["creates"] += 1
        remote = Remote(f"v1_fake_{next(self._numbers)}", body, self.behaviour)
        self.created.append(remote)
        if remote.stored:
            self.interactions[remote.id] = remote
        remote.task = asyncio.create_task(run(remote))
        self._runs.add(remote.task)
        remote.task.add_done_callback(self._runs.discard)
        if body.get("stream"):
            return remote, 0
        if not remote.background:
            await asyncio.wait({remote.task})
        return _json(remote.whole(with_input=False))

    def _get(self, request: RecordedRequest, remote: Remote) -> Script | Follow:
        query = parse_qs(request.query)
        lasts = query.get("last_event_id") or query.get("lastEventId")  # Vertex's REST docs spell it so
        last = lasts[0] if lasts else None
        if query.get("stream") != ["true"]:
            if last is not None:
                return gemini_error(400, "last_event_id is only valid with stream=true", "INVALID_ARGUMENT")
            self.counts["polls"] += 1
            remote.polls += 1
            return self.poll_errors.popleft() if self.poll_errors else _json(remote.whole())
        if self.stream_get_errors or self.refuse_stream_gets:
            self.counts["refused"] += 1
            if self.stream_get_errors:
                return self.stream_get_errors.popleft()
            return gemini_error(405, "Streaming is not available for this interaction", "UNIMPLEMENTED")
        seen = _EVENT_ID.fullmatch(last) if last is not None else None
        after = int(seen[1]) if seen is not None else 0
        if (last is not None and seen is None) or after > len(remote.events):
            return gemini_error(400, f"Unknown last_event_id {last!r}", "INVALID_ARGUMENT")
        return remote, after

    def _cancel(self, request: RecordedRequest, remote: Remote) -> Script:
        self.counts["cancels"] += 1
        remote.cancels += 1
        if remote.cancelled_at is None:
            remote.cancelled_at = request.received_at
        if remote.ended or not remote.background:
            return gemini_error(400, f"Interaction {remote.id} is not running", "FAILED_PRECONDITION")
        remote.cancel()
        return _json(remote.whole())

    async def _stream(
        self, remote: Remote, after: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.counts["streams"] += 1
        remote.streams += 1
        cut = self.cuts.popleft() if self.cuts else None
        self._write_head(writer, 200, {"content-type": "text/event-stream", "transfer-encoding": "chunked"})
        # the client sends nothing more: EOF from it is its going away
        gone = asyncio.ensure_future(reader.read(1))
        try:
            if await self._follow(remote, after, cut, writer, gone):
                writer.write(_chunk(sse("[DONE]")) + b"0\r\n\r\n")
                await writer.drain()
                self.completed += 1
        except ConnectionError:
            self._record_disconnect()
        finally:
            gone.cancel()

    async def _follow(
        self, remote: Remote, after: int, cut: int | None, writer: asyncio.StreamWriter, gone: Any
    ) -> bool:
        """Its events after `after`, then each as it comes, to its end (True); False when the response was
        cut (`cut` events sent, or the interaction deleted) or the client went away."""
        sent = after
        while not remote.deleted:
            if sent < len(remote.events):
                if cut is not None and sent - after >= cut:
                    break
                event = remote.events[sent]
                writer.write(_chunk(sse(event, event["event_type"])))
                await writer.drain()
                sent += 1
            elif remote.ended:
                return True
            else:
                await asyncio.wait({gone, remote.next_change()}, return_when=asyncio.FIRST_COMPLETED)
                if gone.done():
                    self._record_disconnect()
                    return False
        writer.transport.abort()  # no terminating chunk: the connection dropped mid-stream
        return False


def _refused(body: dict[str, Any]) -> str | None:
    """Why Google's API would refuse this create (400), if it would."""
    if bool(body.get("model")) == bool(body.get("agent")):
        return "Exactly one of model and agent must be set"
    if body.get("agent") and not body.get("background"):
        return "Agents run only in the background: set background to true"
    if body.get("store") is False and (body.get("background") or body.get("previous_interaction_id")):
        return "store=false cannot be combined with background or previous_interaction_id"
    return None


def _json(body: Any) -> Script:
    return Script(body=json.dumps(body).encode(), content_type="application/json")


def _not_allowed(request: RecordedRequest) -> Script:
    return gemini_error(405, f"{request.method} is not allowed on {request.path}", "UNIMPLEMENTED")


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)
