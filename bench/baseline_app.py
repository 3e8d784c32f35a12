"""The baseline: the stack's own ceiling, served exactly like the server (granian, uvloop, same processes).

- `POST /v1beta/interactions`: read the body, one Redis SET of it (with a TTL, as the server's records have),
  answer a JSON document that carries it, so that request and response are about as large as the server's.
- `POST /relay`: forward the body to the fake upstream and relay its response bytes as they arrive (no
  parsing): the ceiling for streaming through litestar + granian + httpx.
- `POST /relay_once`: forward the body, await the upstream's whole reply, answer it: the ceiling for a
  non-streamed call through the same stack (the bare relay of scenario 8). No state, no parsing.
- `/remote/relay` and `/remote/relay_once`: the same two, to the upstream in a process of its own
  (bench/upstream_server.py), through the server's own upstream client (`UpstreamClient` of
  server/upstream/transport.py, on server/upstream/http1/): the bare relay of scenario 8 uses the very client
  our server uses, so that the ratio measures what the server adds to the call, not a choice of client.
  The two in-process routes keep `httpx.AsyncClient`, the client of issue 6's runs of scenarios 5 and 6.
  With `?to=interactions` they post to the upstream process's `/v1beta/interactions` instead of its chat
  completions (the bare relay of the `interactions` backend's call).
- `GET /readyz`: a Redis PING.

`python -m bench.baseline_app` reads REDIS_URL, PORT, WEB_PROCESSES, BENCH_UPSTREAM_URL,
BENCH_REMOTE_UPSTREAM_URL and BENCH_REMOTE_INTERACTIONS_URL, and for experiments BENCH_BASELINE_SETS
(Redis round trips per create, one by default).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx
import msgspec
from granian import Granian
from granian.constants import Interfaces, Loops
from litestar import Litestar, Request, Response, get, post
from litestar.response import Stream
from redis.asyncio import Redis

from server.settings import ModelRoute
from server.upstream import http1
from server.upstream.transport import UpstreamClient

TTL_MS = 55 * 24 * 3600 * 1000
JSON = "application/json"


class State:
    def __init__(self, redis: Redis, upstreams: tuple[str, str, str], sets: int) -> None:
        self.redis = redis
        self.upstream_url, self.remote_upstream_url, self.remote_interactions_url = upstreams
        self.sets = sets
        # the limits and keep-alive of the server's upstream clients (server/upstream/transport.py)
        self.http = httpx.AsyncClient(
            timeout=httpx.Timeout(connect=5.0, read=300.0, write=10.0, pool=5.0),
            limits=httpx.Limits(max_connections=2000, max_keepalive_connections=100, keepalive_expiry=30.0),
        )
        route = {"match": "bench-up-*", "backend": "openai", "base_url": self.remote_upstream_url}
        self.remote = UpstreamClient(msgspec.convert({**route, "max_connections": 4000}, ModelRoute))

    async def send(self, request: Request[Any, Any, Any]) -> httpx.Response:
        """POST the request's body to the in-process upstream: the response, its body not read yet."""
        body = await request.body()
        upstream = self.http.build_request(
            "POST", self.upstream_url, content=body, headers={"content-type": JSON}
        )
        return await self.http.send(upstream, stream=True)

    async def send_remote(self, request: Request[Any, Any, Any]) -> http1.Response:
        """The same to the upstream process, through the server's own upstream client (one pool for both
        of its paths, as the server has one per route)."""
        body = await request.body()
        deadline = asyncio.get_running_loop().time() + 300.0
        to = request.query_params.get("to")
        url = self.remote_interactions_url if to == "interactions" else self.remote_upstream_url
        return await self.remote.post(url, {"content-type": JSON}, body, deadline)

    async def aclose(self) -> None:
        await self.http.aclose()
        await self.remote.aclose()


def _state(request: Request[Any, Any, Any]) -> State:
    state: State = request.app.state.bench
    return state


@post("/v1beta/interactions", status_code=200)
async def create(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = _state(request)
    body = await request.body()
    key = "bench:" + secrets.token_urlsafe(16)
    for _ in range(state.sets):
        await state.redis.set(key, body, px=TTL_MS)
    content = (
        b'{"id":"' + key[6:].encode() + b'","object":"interaction","status":"completed","request":' + body
    )
    return Response(content=content + b"}", media_type=JSON)


@post("/relay", status_code=200)
async def relay(request: Request[Any, Any, Any]) -> Stream:
    response = await _state(request).send(request)

    async def chunks() -> AsyncIterator[bytes]:
        try:
            async for chunk in response.aiter_raw():
                yield chunk
        finally:
            await response.aclose()

    return Stream(chunks(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


@post("/remote/relay", status_code=200)
async def remote_relay(request: Request[Any, Any, Any]) -> Stream:
    response = await _state(request).send_remote(request)

    async def chunks() -> AsyncIterator[bytes]:
        try:
            while (chunk := await response.chunk()) is not None:
                yield chunk
        finally:
            response.close()

    return Stream(chunks(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


@post("/relay_once", status_code=200)
async def relay_once(request: Request[Any, Any, Any]) -> Response[bytes]:
    upstream = await _state(request).send(request)
    try:
        content = await upstream.aread()
    finally:
        await upstream.aclose()
    media_type = upstream.headers.get("content-type", JSON)
    return Response(content=content, status_code=upstream.status_code, media_type=media_type)


@post("/remote/relay_once", status_code=200)
async def remote_relay_once(request: Request[Any, Any, Any]) -> Response[bytes]:
    upstream = await _state(request).send_remote(request)
    content = await upstream.read(2**31)
    media_type = upstream.headers.get("content-type", JSON)
    return Response(content=content, status_code=upstream.status, media_type=media_type)


@get("/readyz")
async def readyz(request: Request[Any, Any, Any]) -> Response[bytes]:
    await _state(request).redis.ping()
    return Response(content=b'{"status":"ready"}', media_type=JSON)


def create_app() -> Litestar:
    redis_url = os.environ["REDIS_URL"]
    nowhere = "http://127.0.0.1:9/v1/chat/completions"
    upstreams = (
        os.environ.get("BENCH_UPSTREAM_URL", nowhere),
        os.environ.get("BENCH_REMOTE_UPSTREAM_URL", nowhere),
        os.environ.get("BENCH_REMOTE_INTERACTIONS_URL", nowhere),
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        redis = Redis.from_url(redis_url)
        app.state.bench = State(redis, upstreams, int(os.environ.get("BENCH_BASELINE_SETS", "1")))
        try:
            yield
        finally:
            await app.state.bench.aclose()
            await redis.aclose()

    return Litestar(
        route_handlers=[create, relay, remote_relay, relay_once, remote_relay_once, readyz],
        lifespan=[lifespan],
        openapi_config=None,
        request_max_body_size=None,
        debug=False,
    )


def main() -> int:
    Granian(
        "bench.baseline_app:create_app",
        factory=True,
        address="127.0.0.1",
        port=int(os.environ.get("PORT", "8001")),
        interface=Interfaces.ASGI,
        workers=int(os.environ.get("WEB_PROCESSES", "1")),
        loop=Loops.uvloop,
        log_access=False,
    ).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
