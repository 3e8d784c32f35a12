"""The upstream HTTP/1.1 client (`server/upstream/http1/`) against raw servers on real sockets: framing,
keep-alive, the one retry of a stale kept connection, broken connections, timeouts, the pool's limit, and
closing a response early (how a cancel reaches the upstream)."""

from __future__ import annotations

import asyncio
import time

import pytest

from server.upstream.http1 import (
    Client,
    ConnectFailed,
    ConnectionBroken,
    DeadlineExceeded,
    PoolTimedOut,
    ReadTimedOut,
    Target,
    Timeouts,
)

from .raw_http import (
    Peer,
    Start,
    answer_each,
    body,
    chunk,
    eventually,
    free_port,
    head,
    post,
    silent,
    sized,
)
from .raw_http import client as new_client


async def test_a_content_length_body_arrives_whole_with_status_reason_and_lowercased_headers(
    start: Start, client: Client
) -> None:
    server = await start(lambda peer: answer_each(peer, sized(b"hello world", 201, "Made", X_Thing="Yes")))
    response = await post(client, server.url("/v1/chat?a=b"))
    assert (response.status, response.reason) == (201, "Made")
    assert response.headers == {"content-length": "11", "x-thing": "Yes"}
    assert await body(response) == b"hello world"
    [request] = server.requests
    assert request.line == "POST /v1/chat?a=b HTTP/1.1"
    assert request.header("host") == f"127.0.0.1:{server.port}"
    assert (request.header("x-test"), request.header("content-length")) == ("1", "8")
    assert request.body == b'{"q": 1}'


async def test_a_chunked_body_is_handed_over_as_it_arrives(start: Start, client: Client) -> None:
    first_read = asyncio.Event()

    async def serve(peer: Peer) -> None:
        await peer.request()
        await peer.send(head(transfer_encoding="chunked") + chunk(b"data: one\n\n"))
        await first_read.wait()  # the rest only once the client has had the first piece
        await peer.send(chunk(b"data: two\n\n") + chunk(b"data: three\n\n") + chunk(b""))
        await peer.until_gone()

    server = await start(serve)
    response = await post(client, server.url())
    assert response.headers["transfer-encoding"] == "chunked"
    assert await response.chunk() == b"data: one\n\n"
    first_read.set()
    assert await body(response) == b"data: two\n\ndata: three\n\n"


async def test_a_body_without_length_ends_with_the_connection_and_it_is_not_reused(
    start: Start, client: Client
) -> None:
    async def serve(peer: Peer) -> None:
        await peer.request()
        await peer.send(head(202, "Accepted", content_type="text/plain") + b"until ")
        await peer.send(b"the close")

    server = await start(serve)
    response = await post(client, server.url())
    assert (response.status, response.reason) == (202, "Accepted")
    assert response.headers == {"content-type": "text/plain"}
    assert await body(response) == b"until the close"
    assert await body(await post(client, server.url())) == b"until the close"
    assert server.connections == 2


async def test_keep_alive_sends_sequential_requests_over_one_connection(start: Start, client: Client) -> None:
    server = await start(lambda peer: answer_each(peer, sized(b"ok")))
    for _ in range(3):
        assert await body(await post(client, server.url())) == b"ok"
    assert (server.connections, len(server.requests)) == (1, 3)


async def test_a_response_with_connection_close_is_not_reused(start: Start, client: Client) -> None:
    server = await start(lambda peer: answer_each(peer, sized(b"ok", connection="close")))
    for _ in range(2):
        assert await body(await post(client, server.url())) == b"ok"
    assert (server.connections, len(server.requests)) == (2, 2)


async def test_a_kept_connection_closed_unanswered_is_retried_once_on_a_new_one(
    start: Start, client: Client
) -> None:
    async def serve(peer: Peer) -> None:
        if peer.index == 0:
            await peer.request()
            await peer.send(sized(b"first"))
            await peer.request()  # the second request is read, then the connection closes unanswered
            return
        await answer_each(peer, sized(b"second"))

    server = await start(serve)
    assert await body(await post(client, server.url())) == b"first"
    assert await body(await post(client, server.url())) == b"second"
    assert (server.connections, len(server.requests)) == (2, 3)


async def test_a_new_connection_closed_unanswered_is_broken_and_not_retried(
    start: Start, client: Client
) -> None:
    async def serve(peer: Peer) -> None:
        await peer.request()

    server = await start(serve)
    with pytest.raises(ConnectionBroken, match="closed the connection before the end"):
        await post(client, server.url())
    await asyncio.sleep(0.05)
    assert (server.connections, len(server.requests)) == (1, 1)


async def test_a_close_mid_body_delivers_what_came_then_is_broken(start: Start, client: Client) -> None:
    async def serve(peer: Peer) -> None:
        await peer.request()
        await peer.send(head(content_length="100") + b"0123456789")

    server = await start(serve)
    response = await post(client, server.url())
    received: list[bytes] = []
    with pytest.raises(ConnectionBroken):
        while (piece := await response.chunk()) is not None:
            received.append(piece)
    response.close()
    assert b"".join(received) == b"0123456789"


async def head_then_silence(peer: Peer) -> None:
    await peer.request()
    await peer.send(head(content_length="10") + b"01234")
    await peer.until_gone()


async def test_silence_after_the_head_is_a_read_timeout(start: Start, client: Client) -> None:
    server = await start(head_then_silence)
    response = await post(client, server.url(), Timeouts(connect=2.0, read=0.2, pool=2.0))
    assert await response.chunk() == b"01234"
    began = time.monotonic()
    with pytest.raises(ReadTimedOut):
        await response.chunk()
    response.close()
    assert 0.15 < time.monotonic() - began < 1.0


async def test_silence_after_the_head_past_the_deadline_is_deadline_exceeded(
    start: Start, client: Client
) -> None:
    server = await start(head_then_silence)
    began = time.monotonic()
    response = await post(client, server.url(), Timeouts(connect=2.0, read=5.0, pool=2.0), deadline=0.25)
    assert await response.chunk() == b"01234"
    with pytest.raises(DeadlineExceeded):
        await response.chunk()
    response.close()
    assert 0.2 < time.monotonic() - began < 1.0


@pytest.mark.parametrize(
    ("read", "deadline", "error"),
    [(0.2, 5.0, ReadTimedOut), (5.0, 0.2, DeadlineExceeded)],
    ids=["read-first", "deadline-first"],
)
async def test_silence_before_the_head_times_out_at_the_sooner_of_read_and_deadline(
    start: Start, client: Client, read: float, deadline: float, error: type[Exception]
) -> None:
    server = await start(silent)
    began = time.monotonic()
    with pytest.raises(error):
        await post(client, server.url(), Timeouts(connect=2.0, read=read, pool=2.0), deadline=deadline)
    assert 0.15 < time.monotonic() - began < 1.0
    assert await eventually(lambda: len(server.gone) == 1)  # the timed-out connection was closed


async def test_the_read_timeout_bounds_each_silence_not_the_whole_body(start: Start, client: Client) -> None:
    async def serve(peer: Peer) -> None:
        await peer.request()
        await peer.send(head(transfer_encoding="chunked"))
        for n in range(4):
            await asyncio.sleep(0.06)
            await peer.send(chunk(b"%d" % n))
        await peer.send(chunk(b""))
        await peer.until_gone()

    server = await start(serve)
    response = await post(client, server.url(), Timeouts(connect=2.0, read=0.15, pool=2.0))
    assert await body(response) == b"0123"  # 0.24 s in all, 0.06 s at most without a byte


async def test_a_refused_connection_and_a_bad_scheme_are_connect_failures(client: Client) -> None:
    with pytest.raises(ConnectFailed, match=r"cannot connect to 127\.0\.0\.1"):
        await post(client, f"http://127.0.0.1:{free_port()}/v1/x")
    with pytest.raises(ConnectFailed, match="only http:// and https://"):
        Target.parse("ftp://127.0.0.1/v1/x")


async def test_the_pool_limit_makes_a_second_post_wait_then_proceed(start: Start) -> None:
    server = await start(lambda peer: answer_each(peer, sized(b"ok")))
    async with new_client(max_connections=1) as client:
        first = await post(client, server.url())
        with pytest.raises(PoolTimedOut):
            await post(client, server.url(), Timeouts(connect=2.0, read=2.0, pool=0.2))
        waiting = asyncio.create_task(post(client, server.url()))
        try:
            await asyncio.sleep(0.05)
            assert not waiting.done()
            assert await first.chunk() == b"ok" and await first.chunk() is None
            first.close()
            assert await body(await waiting) == b"ok"
        finally:
            waiting.cancel()
    assert (server.connections, len(server.requests)) == (1, 2)  # the waiter took the freed connection


async def test_closing_a_response_early_closes_its_connection_at_once(start: Start, client: Client) -> None:
    async def serve(peer: Peer) -> None:
        if peer.index > 0:
            return await answer_each(peer, sized(b"next"))
        await peer.request()
        await peer.send(head(transfer_encoding="chunked") + chunk(b"first"))
        await peer.until_gone()

    server = await start(serve)
    response = await post(client, server.url())
    assert await response.chunk() == b"first"
    closed = time.monotonic()
    response.close()
    assert await eventually(lambda: len(server.gone) == 1, within=1.0)
    assert server.gone[0] - closed < 0.2
    assert await body(await post(client, server.url())) == b"next"
    assert server.connections == 2
