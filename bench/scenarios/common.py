"""What the scenarios share: the requests they send, and the `Bench` (the running stack, the fake upstream,
the plan) that each of them takes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redis.asyncio import Redis

from ..client import Connection
from ..procs import Stack, WebServer
from ..upstream import BenchUpstream, Exchange
from ..wrk import Pids, WrkResult, run_wrk
from .plan import Plan

API_KEY = "bench-key"
HEADERS = {"x-goog-api-key": API_KEY, "content-type": "application/json"}
CREATE = "/v1beta/interactions"
#: the create prompt of scenario 1: about 200 bytes, like a short chat turn
PROMPT = (
    "Please summarise the main points of these meeting notes in three short bullet points for the team, "
    "keeping the decisions and owners, and leave out the small talk at the start and the end of it."
)


@dataclass(eq=False)
class Bench:
    """What the scenarios share: the plan, the stack, the fake upstream, a Redis client."""

    plan: Plan
    stack: Stack
    server: WebServer
    baseline: WebServer
    #: the one-process server and baseline of scenarios 5 and 6 (the two above when they have one process)
    one_server: WebServer
    one_baseline: WebServer
    upstream: BenchUpstream
    redis: Redis
    workdir: Path
    #: p50 latency of one baseline request with the Python client (set by scenario 3)
    baseline_python_p50_ms: float | None = field(default=None, init=False)
    #: p50 latency of one baseline request with wrk at concurrency 1 (set by scenario 1)
    baseline_wrk_p50_ms: float | None = field(default=None, init=False)

    async def wrk(
        self, server: WebServer, body: dict[str, Any], connections: int, seconds: float
    ) -> WrkResult:
        return await run_wrk(
            server.url + CREATE,
            json.dumps(body).encode(),
            api_key=API_KEY,
            connections=connections,
            seconds=seconds,
            pids=Pids(server.pids(), self.stack.redis_pids()),
            workdir=self.workdir,
        )

    async def next_exchange(self, tag: str, within: float = 10.0) -> Exchange:
        """The upstream request carrying `tag` (the bench's sequential scenarios wait for one at a time)."""
        async with asyncio.timeout(within):
            while True:
                exchange = await self.upstream.arrived.get()
                if exchange.tag == tag:
                    return exchange

    def drain_arrivals(self) -> None:
        while not self.upstream.arrived.empty():
            self.upstream.arrived.get_nowait()


def payload(**fields: Any) -> bytes:
    """A JSON request body."""
    return json.dumps(fields).encode()


def json_object(raw: bytes) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(raw)
    return value


async def creates(url: str, key: str, bodies: Iterable[bytes], connections: int) -> int:
    """A create of each of `bodies` in `key`'s tenant, over `connections` connections at once, as fast as
    the server answers them; how many were answered 200."""
    todo = iter(bodies)
    answered = 0

    async def one_connection() -> None:
        nonlocal answered
        async with Connection(url, {"x-goog-api-key": key, "content-type": "application/json"}) as conn:
            for body in todo:
                if (await conn.request("POST", CREATE, body)).status == 200:
                    answered += 1

    await asyncio.gather(*(one_connection() for _ in range(connections)))
    return answered
