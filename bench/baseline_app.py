"""The baseline: the stack's own ceiling, served exactly like the server (granian, uvloop, same processes).

- `POST /v1beta/interactions`: read the body, one Redis SET of it (with a TTL, as the server's records have),
  answer a JSON document that carries it, so that request and response are about as large as the server's.
- `POST /relay`: forward the body to the fake upstream and relay its response bytes as they arrive (no
  parsing): the ceiling for streaming through litestar + granian + httpx.
- `GET /readyz`: a Redis PING.

`python -m bench.baseline_app` reads REDIS_URL, PORT, WEB_PROCESSES and BENCH_UPSTREAM_URL, and for
experiments BENCH_BASELINE_SETS (Redis round trips per create, one by default).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx
from granian import Granian
from granian.constants import Interfaces, Loops
from litestar import Litestar, Request, Response, get, post
from litestar.response import Stream
from redis.asyncio import Redis

TTL_MS = 55 * 24 * 3600 * 1000
JSON = "application/json"


class State:
    def __init__(self, redis: Redis, http: httpx.AsyncClient, upstream_url: str, sets: int) -> None:
        self.redis = redis
        self.http = http
        self.upstream_url = upstream_url
        self.sets = sets


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
    state = _state(request)
    body = await request.body()
    upstream = state.http.build_request(
        "POST", state.upstream_url, content=body, headers={"content-type": "application/json"}
    )
    response = await state.http.send(upstream, stream=True)

    async def chunks() -> AsyncIterator[bytes]:
        try:
            async for chunk in response.aiter_raw():
                yield chunk
        finally:
            await response.aclose()

    return Stream(chunks(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


@get("/readyz")
async def readyz(request: Request[Any, Any, Any]) -> Response[bytes]:
    await _state(request).redis.ping()
    return Response(content=b'{"status":"ready"}', media_type=JSON)


def create_app() -> Litestar:
    redis_url = os.environ["REDIS_URL"]
    upstream_url = os.environ.get("BENCH_UPSTREAM_URL", "http://127.0.0.1:9/v1/chat/completions")

    @contextlib.asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        redis = Redis.from_url(redis_url)
        http = httpx.AsyncClient(
            timeout=httpx.Timeout(connect=5.0, read=300.0, write=10.0, pool=5.0),
            limits=httpx.Limits(max_connections=2000, max_keepalive_connections=100),
        )
        app.state.bench = State(redis, http, upstream_url, int(os.environ.get("BENCH_BASELINE_SETS", "1")))
        try:
            yield
        finally:
            await http.aclose()
            await redis.aclose()

    return Litestar(
        route_handlers=[create, relay, readyz],
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
