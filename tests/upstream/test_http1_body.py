"""The upstream HTTP/1.1 client (`server/upstream/http1/`) on real sockets, continued: what it makes of a
body (content-encoding, interim 1xx heads), the request's own headers, and flow control toward a slow
reader."""

from __future__ import annotations

import asyncio
import gzip
import random
import zlib

import pytest

from server.upstream.http1 import Client, ConnectFailed, ConnectionBroken, Target, Timeouts

from .raw_http import (
    TIMEOUTS,
    Peer,
    Start,
    answer_each,
    body,
    chunk,
    eventually,
    head,
    post,
    sized,
    soon,
)
from .raw_http import client as new_client


async def test_a_gzip_body_is_decoded(start: Start, client: Client) -> None:
    plain = b"data: a fairly repetitive event\n\n" * 200
    packed = gzip.compress(plain)
    thirds = [packed[: len(packed) // 3], packed[len(packed) // 3 : -5], packed[-5:]]
    framed = b"".join(chunk(piece) for piece in [*thirds, b""])
    gzipped = head(transfer_encoding="chunked", content_encoding="gzip") + framed
    server = await start(lambda peer: answer_each(peer, gzipped))
    response = await post(client, server.url())
    assert response.headers["content-encoding"] == "gzip"
    assert await body(response) == plain


async def test_an_unknown_content_encoding_is_broken(start: Start, client: Client) -> None:
    server = await start(lambda peer: answer_each(peer, sized(b"\x00\x01", content_encoding="br")))
    with pytest.raises(ConnectionBroken, match="unsupported content-encoding 'br'"):
        await post(client, server.url())


async def test_an_unknown_content_encoding_frees_its_slot_and_closes_its_connection(start: Start) -> None:
    bad = await start(lambda peer: answer_each(peer, sized(b"\x00\x01", content_encoding="br")))
    good = await start(lambda peer: answer_each(peer, sized(b"ok")))
    async with new_client(max_connections=1) as client:
        with pytest.raises(ConnectionBroken):
            await post(client, bad.url())
        assert await body(await post(client, good.url(), Timeouts(connect=2.0, read=2.0, pool=0.2))) == b"ok"
        assert await eventually(lambda: len(bad.gone) == 1, within=0.5)


@pytest.mark.parametrize("wbits", [zlib.MAX_WBITS, -zlib.MAX_WBITS], ids=["zlib-wrapped", "raw"])
async def test_a_deflate_body_is_decoded_wrapped_or_raw(start: Start, client: Client, wbits: int) -> None:
    plain = b"deflated " * 500
    packer = zlib.compressobj(wbits=wbits)
    packed = packer.compress(plain) + packer.flush()
    server = await start(lambda peer: answer_each(peer, sized(packed, content_encoding="deflate")))
    assert await body(await post(client, server.url())) == plain


async def test_a_corrupt_gzip_body_is_broken(start: Start, client: Client) -> None:
    server = await start(lambda peer: answer_each(peer, sized(b"not gzip at all", content_encoding="gzip")))
    response = await post(client, server.url())
    with pytest.raises(ConnectionBroken):
        await body(response)


async def test_an_interim_1xx_head_is_skipped_for_the_final_response(start: Start) -> None:
    async def serve(peer: Peer) -> None:
        answered = 0
        while await peer.request() is not None:
            answered += 1
            await peer.send(b"HTTP/1.1 103 Early Hints\r\nlink: </style.css>\r\n\r\n")
            await asyncio.sleep(0.05)
            await peer.send(sized(b"answer %d" % answered))

    server = await start(serve)
    async with new_client(max_connections=1) as client:
        for answered in (1, 2):
            response = await post(client, server.url())
            assert (response.status, await body(response)) == (200, b"answer %d" % answered)


async def test_a_header_value_with_a_line_break_is_refused_before_anything_is_sent(
    start: Start, client: Client
) -> None:
    server = await start(lambda peer: answer_each(peer, sized(b"ok")))
    for value in ("a\r\nx-injected: 1", "a\nb", "a\rb"):
        with pytest.raises(ConnectFailed, match="line break"):
            await client.post(Target.parse(server.url()), {"x-evil": value}, b"", TIMEOUTS, soon())
    await asyncio.sleep(0.05)
    assert (server.connections, server.requests) == (0, [])


async def test_a_large_chunked_body_read_slowly_arrives_whole_and_in_order(
    start: Start, client: Client
) -> None:
    plain = random.Random(12).randbytes(4 << 20)
    frames = [chunk(plain[at : at + 65536]) for at in range(0, len(plain), 65536)]

    async def serve(peer: Peer) -> None:
        await peer.request()
        await peer.send(head(transfer_encoding="chunked"))
        for frame in frames:
            await peer.send(frame)
        await peer.send(chunk(b""))
        await peer.until_gone()

    server = await start(serve)
    response = await post(client, server.url())
    got = []
    while (piece := await response.chunk()) is not None:
        got.append(piece)
        await asyncio.sleep(0.002)
    response.close()
    assert len(got) >= 64 and b"".join(got) == plain


async def test_a_stalled_reader_stops_the_socket_being_read(start: Start, client: Client) -> None:
    """While the reader stalls, the client buffers a bounded amount, so the upstream's writes stop once the
    kernel's buffers are full: it got nowhere near the whole 32 MB out."""
    size, piece, sent = 32 << 20, b"x" * 65536, [0]

    async def serve(peer: Peer) -> None:
        await peer.request()
        await peer.send(head(content_length=str(size)))
        for _ in range(size // len(piece)):
            await peer.send(piece)
            sent[0] += len(piece)
        await peer.until_gone()

    server = await start(serve)
    response = await post(client, server.url())
    first = await response.chunk()
    await asyncio.sleep(0.2)
    assert sent[0] < size // 2
    assert len(first or b"") + len(await body(response)) == size
    assert sent[0] == size
