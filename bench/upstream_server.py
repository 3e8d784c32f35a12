"""`python -m bench.upstream_server`: the fake OpenAI-compatible (and Google Interactions) upstream of
scenarios 6 and 8, in a process of its own, so that its CPU is neither counted as the server's nor taken
from the bench's load generator.

It answers `POST /v1/chat/completions` with the tests' OpenAI chunk script of `bench-fast`
(tests/fakes/openai.py, "ok and done"): as the script's chunked SSE stream when the body asks for
`"stream": true`, else as one `chat.completion` JSON document made of the same chunks (a server that asks
for a non-streamed reply gets one). Unlike the tests' FakeServer, which closes every connection, it keeps
connections alive as real upstreams do: the HTTP client's connection reuse is part of what is measured, and
a TCP connect per request would be charged to every path alike. Every answer is built once at start and
written in one piece, so the upstream's own CPU per request stays a small, steady part of the picture.

A streamed request for the model `bench-drip` (scenario 6) is answered slowly instead: the same script with
BENCH_DRIP_WORDS words, the first delta at once and one more every BENCH_DRIP_INTERVAL seconds, but the last
(which carries the end) only once the bench says so: `POST /drip/release?per_second=N` lets the waiting
streams end, N a second in the order they came (all at once without N), and `POST /drip/hold` makes the next
ones wait again. So every stream of a run is open at once however long they take to open, and they end at
a pace the bench chooses. The drips run on timers of the event loop, so thousands of mostly idle streams
cost this process next to nothing; they are served here rather than in the bench process because one
process cannot hold the client and the upstream side of 10,000 streams within a file descriptor limit of
20,000 (the hard `ulimit -n` of the bench's machine).

`POST /v1beta/interactions` (the `interactions` backend's call, always `stream: true`) gets the same answer as
Google's event stream, chunked alike (tests/fakes/google_interactions.py `text_script`: `interaction.created`,
a step's start, three deltas and stop, `interaction.completed`, `data: [DONE]`).

`GET /last_request` answers the body of the latest POST as it came (the bench records what our server
sends, to replay the same body at the upstream alone and through the bare relay); `GET /healthz` answers
ok. PORT sets the loopback port (default 8002); "upstream ready" is logged once it listens.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import sys
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import msgspec

from tests.fakes.google_interactions import text_script
from tests.fakes.http import Script
from tests.fakes.openai import openai_text_script

CHAT_PATH = "/v1/chat/completions"
INTERACTIONS_PATH = "/v1beta/interactions"
#: the script of the `bench-fast` model of the other scenarios: the same upstream work per request
SCRIPT = openai_text_script("ok and done")
#: the same answer as Google's Interactions API streams it (the `interactions` backend of scenario 8)
IX_SCRIPT = text_script("ok and done")
#: the model answered slowly (scenario 6)
DRIP_MODEL = "bench-drip"


class _Body(msgspec.Struct):
    """The two fields of a chat request that choose the answer; the rest is not read."""

    model: str = ""
    stream: bool = False


def _response(status: str, content_type: str, body: bytes, chunked: bool = False) -> bytes:
    framing = "transfer-encoding: chunked" if chunked else f"content-length: {len(body)}"
    head = f"HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\n{framing}\r\n\r\n"
    return head.encode("latin-1") + body


def completion(frames: list[bytes]) -> bytes:
    """The non-streamed reply that carries what the script's chunks carry: text, finish reason, usage."""
    content, finish, usage = "", "stop", None
    for frame in frames:
        data = frame.strip().removeprefix(b"data: ")
        if data == b"[DONE]":
            continue
        chunk = json.loads(data)
        for choice in chunk["choices"]:
            content += choice["delta"].get("content") or ""
            finish = choice["finish_reason"] or finish
        usage = chunk.get("usage") or usage
    message = {"role": "assistant", "content": content}
    return json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "fake-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        },
        separators=(",", ":"),
    ).encode()


@dataclass(frozen=True)
class Answers:
    """The two answers to a chat request and the one to an interactions create, as whole HTTP responses."""

    streamed: bytes
    whole: bytes
    interactions: bytes

    @classmethod
    def of(cls, script: Script, interactions: Script) -> Answers:
        frames = script.chunks or []
        return cls(
            streamed=_chunked(script),
            whole=_response("200 OK", "application/json", completion(frames)),
            interactions=_chunked(interactions),
        )


def _chunked(script: Script) -> bytes:
    """The script's stream as one response, a chunk per frame."""
    frames = script.chunks or []
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(frame), frame) for frame in frames) + b"0\r\n\r\n"
    return _response("200 OK", script.content_type, chunked, chunked=True)


@dataclass(frozen=True)
class Drip:
    """The slow streamed answer of `DRIP_MODEL`, cut into the pieces written `interval` apart: the head with
    the role chunk and the first delta, then one delta each, the last one with the finish and usage chunks,
    `[DONE]` and the chunked body's end."""

    pieces: tuple[bytes, ...]
    interval: float

    @classmethod
    def of(cls, words: int, interval: float) -> Drip:
        script = openai_text_script(" ".join(f"w{i}" for i in range(words)))
        framed = [b"%x\r\n%s\r\n" % (len(frame), frame) for frame in script.chunks or []]
        head = _response("200 OK", script.content_type, b"", chunked=True)
        # framed: the role chunk, one chunk per word, then the finish, usage and [DONE] chunks
        pieces = [head + framed[0] + framed[1], *framed[2 : words + 1]]
        pieces[-1] += b"".join(framed[words + 1 :]) + b"0\r\n\r\n"
        return cls(tuple(pieces), interval)

    @classmethod
    def from_environment(cls) -> Drip:
        words = int(os.environ.get("BENCH_DRIP_WORDS", "5"))
        return cls.of(max(1, words), float(os.environ.get("BENCH_DRIP_INTERVAL", "1.0")))


OK = _response("200 OK", "application/json", b'{"status":"ok"}')


class Upstream:
    """What the connections share: the answers, the latest request body, and the drips that wait for a
    release to end."""

    def __init__(self, answers: Answers, drip: Drip) -> None:
        self.answers = answers
        self.drip = drip
        self.last_request = b"{}"
        self.requests = 0
        #: while true, a drip's last piece waits in `held` for a release
        self.holding = True
        self.held: list[Callable[[], None]] = []

    def answer(self, method: str, target: str, body: bytes) -> bytes | Drip:
        path, _, query = target.partition("?")
        if method == "POST" and path.endswith(CHAT_PATH):
            self.last_request = body
            self.requests += 1
            try:
                wanted = msgspec.json.decode(body, type=_Body)
            except msgspec.DecodeError:
                return _response("400 Bad Request", "application/json", b'{"error":{"message":"bad json"}}')
            if not wanted.stream:
                return self.answers.whole
            return self.drip if wanted.model == DRIP_MODEL else self.answers.streamed
        if method == "POST" and path.endswith(INTERACTIONS_PATH):
            self.last_request = body
            self.requests += 1
            return self.answers.interactions
        if method == "POST" and path == "/drip/hold":
            self.holding = True
            return OK
        if method == "POST" and path == "/drip/release":
            self.release(float(urllib.parse.parse_qs(query).get("per_second", ["0"])[0]))
            return OK
        if target == "/last_request":
            return _response("200 OK", "application/json", self.last_request)
        if target == "/healthz":
            return OK
        return _response("404 Not Found", "application/json", b'{"error":{"message":"no such path"}}')

    def release(self, per_second: float) -> None:
        """Let the held drips end, `per_second` of them a second (0: all now), and no longer hold any."""
        self.holding = False
        held, self.held = self.held, []
        loop = asyncio.get_running_loop()
        for rank, resume in enumerate(held):
            if per_second > 0:
                loop.call_later(rank / per_second, resume)
            else:
                resume()


class Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection: requests framed by Content-Length, answered in order (a request
    that comes while a drip is being written waits for its end)."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        #: a drip is being written (a request that comes meanwhile waits), and the timer of its next piece
        self.dripping = False
        self.timer: asyncio.TimerHandle | None = None
        self.close_after_drip = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not subclasses of asyncio.Transport, though they are one
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._answer_waiting()

    def _answer_waiting(self) -> None:
        while self.transport is not None and not self.dripping and self._answer_one():
            pass

    def _answer_one(self) -> bool:
        """Answer the first whole request in the buffer, if there is one."""
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return False
        lines = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        total = end + 4 + int(headers.get("content-length") or 0)
        if len(self.buffer) < total:
            return False
        body = bytes(self.buffer[end + 4 : total])
        del self.buffer[:total]
        method, target, _version = lines[0].split(" ", 2)
        assert self.transport is not None
        closing = headers.get("connection", "").lower() == "close"
        answer = self.upstream.answer(method, target, body)
        if isinstance(answer, Drip):
            self.close_after_drip = closing
            self.dripping = True
            self._drip(answer, 0)
            return True
        self.transport.write(answer)
        if closing:
            self.transport.close()
            self.transport = None
        return True

    def _drip(self, drip: Drip, index: int) -> None:
        """Write the drip's piece `index` and schedule the next; the last one (after the first) waits for a
        release while the upstream holds; after it, answer what waited."""
        self.timer = None
        if self.transport is None:
            return
        last = index + 1 == len(drip.pieces)
        if last and index > 0 and self.upstream.holding:
            self.upstream.held.append(functools.partial(self._drip, drip, index))
            return
        self.transport.write(drip.pieces[index])
        if not last:
            self.timer = asyncio.get_running_loop().call_later(drip.interval, self._drip, drip, index + 1)
            return
        self.dripping = False
        if self.close_after_drip:
            self.transport.close()
            self.transport = None
        else:
            self._answer_waiting()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


async def serve(port: int) -> None:
    upstream = Upstream(Answers.of(SCRIPT, IX_SCRIPT), Drip.from_environment())
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Connection(upstream), "127.0.0.1", port, backlog=4096)
    print(f"upstream ready on 127.0.0.1:{port}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> int:
    port = int(os.environ.get("PORT", "8002"))
    try:
        import uvloop
    except ImportError:
        asyncio.run(serve(port))
    else:
        uvloop.run(serve(port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
