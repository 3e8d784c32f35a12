"""Idle upstream connections are bounded: at most `max_idle` kept per origin after a burst, and none kept
past the keep-alive, even when no further request comes to reuse or trim them."""

from __future__ import annotations

import asyncio

from server.upstream.http1 import Client

from .raw_http import Start, answer_each, body, eventually, post, sized


async def test_a_burst_keeps_at_most_max_idle_connections(start: Start) -> None:
    server = await start(lambda peer: answer_each(peer, sized(b"ok")))
    client = Client(max_connections=10, max_idle=2)
    try:
        # five responses open at once: five connections; read to their end, only two are kept
        responses = await asyncio.gather(*(post(client, server.url()) for _ in range(5)))
        assert server.connections == 5
        assert [await body(response) for response in responses] == [b"ok"] * 5
        assert await eventually(lambda: len(server.gone) == 3)
        await asyncio.sleep(0.1)
        assert len(server.gone) == 3
        # the two kept ones carry the next requests
        assert [await body(await post(client, server.url())) for _ in range(2)] == [b"ok", b"ok"]
        assert server.connections == 5
    finally:
        await client.aclose()


async def test_an_idle_connection_is_closed_at_its_keep_alive_without_another_request(start: Start) -> None:
    server = await start(lambda peer: answer_each(peer, sized(b"ok")))
    client = Client(max_connections=4, keepalive_seconds=0.2)
    try:
        assert await body(await post(client, server.url())) == b"ok"
        await asyncio.sleep(0.05)
        assert server.gone == []  # kept for reuse at first
        assert await eventually(lambda: len(server.gone) == 1, within=1.0)
        # and the next request opens a new one
        assert await body(await post(client, server.url())) == b"ok"
        assert server.connections == 2
    finally:
        await client.aclose()
