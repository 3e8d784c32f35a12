"""`python -m bench.upstream_server`: the fake OpenAI-compatible upstream of scenario 8, in a process of its
own, so that its CPU is neither counted as the server's nor taken from the bench's load generator.

It answers `POST /v1/chat/completions` with the tests' OpenAI chunk script of `bench-fast`
(tests/fakes/openai.py, "ok and done"): as the script's chunked SSE stream when the body asks for
`"stream": true`, else as one `chat.completion` JSON document made of the same chunks (a server that asks
for a non-streamed reply gets one). Unlike the tests' FakeServer, which closes every connection, it keeps
connections alive as real upstreams do: the HTTP client's connection reuse is part of what is measured, and
a TCP connect per request would be charged to every path alike. Every answer is built once at start and
written in one piece, so the upstream's own CPU per request stays a small, steady part of the picture.

`GET /last_request` answers the body of the latest POST as it came (the bench records what our server
sends, to replay the same body at the upstream alone and through the bare relay); `GET /healthz` answers
ok. PORT sets the loopback port (default 8002); "upstream ready" is logged once it listens.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass
from typing import cast

import msgspec

from tests.fakes.http import Script
from tests.fakes.openai import openai_text_script

CHAT_PATH = "/v1/chat/completions"
#: the script of the `bench-fast` model of the other scenarios: the same upstream work per request
SCRIPT = openai_text_script("ok and done")


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
    """The two answers to a chat request, as whole HTTP responses."""

    streamed: bytes
    whole: bytes

    @classmethod
    def of(cls, script: Script) -> Answers:
        frames = script.chunks or []
        chunked = b"".join(b"%x\r\n%s\r\n" % (len(frame), frame) for frame in frames) + b"0\r\n\r\n"
        return cls(
            streamed=_response("200 OK", script.content_type, chunked, chunked=True),
            whole=_response("200 OK", "application/json", completion(frames)),
        )


class Upstream:
    """What the connections share: the answers and the latest request body."""

    def __init__(self, answers: Answers) -> None:
        self.answers = answers
        self.last_request = b"{}"
        self.requests = 0

    def answer(self, method: str, target: str, body: bytes) -> bytes:
        if method == "POST" and target.split("?", 1)[0].endswith(CHAT_PATH):
            self.last_request = body
            self.requests += 1
            try:
                wanted = msgspec.json.decode(body, type=_Body)
            except msgspec.DecodeError:
                return _response("400 Bad Request", "application/json", b'{"error":{"message":"bad json"}}')
            return self.answers.streamed if wanted.stream else self.answers.whole
        if target == "/last_request":
            return _response("200 OK", "application/json", self.last_request)
        if target == "/healthz":
            return _response("200 OK", "application/json", b'{"status":"ok"}')
        return _response("404 Not Found", "application/json", b'{"error":{"message":"no such path"}}')


class Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection: requests framed by Content-Length, answered in order."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not subclasses of asyncio.Transport, though they are one
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while self.transport is not None and self._answer_one():
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
        self.transport.write(self.upstream.answer(method, target, body))
        if headers.get("connection", "").lower() == "close":
            self.transport.close()
            self.transport = None
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None


async def serve(port: int) -> None:
    upstream = Upstream(Answers.of(SCRIPT))
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
