"""The upstream HTTP/1.1 client over TLS (a self-signed certificate made by the `openssl` CLI), and
`post_stream` of `server/upstream/transport.py` on top of it: how each failure becomes an `UpstreamError`."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import msgspec
import pytest

from server.settings import ModelRoute
from server.upstream.base import UpstreamError
from server.upstream.http1 import ConnectFailed
from server.upstream.transport import UpstreamClient, post_stream

from .raw_http import Peer, Start, answer_each, body, chunk, free_port, head, post, silent, sized
from .raw_http import client as new_client


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A self-signed certificate for 127.0.0.1; its key is beside it, as k.pem."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl CLI is not on PATH: no certificate to serve TLS with")
    where = tmp_path_factory.mktemp("tls")
    key, subject, name = "rsa:2048", "/CN=127.0.0.1", "subjectAltName=IP:127.0.0.1"
    command = ["openssl", "req", "-x509", "-newkey", key, "-nodes", "-days", "1", "-subj", subject]
    command += ["-addext", name, "-keyout", "k.pem", "-out", "c.pem"]
    subprocess.run(command, cwd=where, check=True, capture_output=True)
    return where / "c.pem"


def server_tls(cert: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, cert.with_name("k.pem"))
    return context


async def test_an_https_post_works_when_the_certificate_is_trusted(
    start: Start, cert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    server = await start(lambda peer: answer_each(peer, sized(b"secret")), tls=server_tls(cert))
    assert server.url().startswith("https://127.0.0.1:")
    async with new_client() as client:
        for _ in range(2):
            assert await body(await post(client, server.url())) == b"secret"
    assert (server.connections, len(server.requests)) == (1, 2)
    assert server.requests[0].line == "POST /v1/x HTTP/1.1"


async def test_an_untrusted_certificate_is_a_connect_failure(
    start: Start, cert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    server = await start(lambda peer: answer_each(peer, sized(b"secret")), tls=server_tls(cert))
    async with new_client() as client:
        with pytest.raises(ConnectFailed, match="CERTIFICATE_VERIFY_FAILED"):
            await post(client, server.url())
    assert server.requests == []


class Ask(msgspec.Struct):
    model: str
    stream: bool = True


async def stream(base_url: str, deadline: float = 5.0, read_timeout: float = 5.0) -> list[bytes]:
    """What `post_stream` yields for a POST to base_url + /v1/chat/completions."""
    route = ModelRoute(match="*", backend="openai", base_url=base_url, read_timeout_seconds=read_timeout)
    client = UpstreamClient(route)
    try:
        chunks = post_stream(
            client,
            "openai",
            f"{base_url}/v1/chat/completions",
            {"authorization": "Bearer k"},
            Ask("m"),
            deadline_seconds=deadline,
        )
        return [piece async for piece in chunks]
    finally:
        await client.aclose()


async def test_post_stream_yields_the_body_as_it_arrives(start: Start) -> None:
    events = [b"data: {}\n\n", b"data: [DONE]\n\n"]
    framed = head(transfer_encoding="chunked") + b"".join(chunk(e) for e in [*events, b""])
    server = await start(lambda peer: answer_each(peer, framed))
    assert b"".join(await stream(f"http://127.0.0.1:{server.port}")) == b"".join(events)
    [request] = server.requests
    assert request.line == "POST /v1/chat/completions HTTP/1.1"
    assert (request.header("content-type"), request.header("authorization")) == (
        "application/json",
        "Bearer k",
    )
    assert msgspec.json.decode(request.body) == {"model": "m", "stream": True}


async def test_post_stream_turns_a_429_into_an_upstream_error_with_retry_after(start: Start) -> None:
    error = b'{"error": {"message": "Rate limit reached for m", "type": "requests"}}'
    answer = sized(error, 429, "Too Many Requests", retry_after="3", content_type="application/json")
    server = await start(lambda peer: answer_each(peer, answer))
    with pytest.raises(UpstreamError) as caught:
        await stream(f"http://127.0.0.1:{server.port}")
    assert (caught.value.status, caught.value.retry_after) == (429, 3.0)
    assert (caught.value.message, caught.value.backend, caught.value.timeout) == (
        "Rate limit reached for m",
        "openai",
        False,
    )


async def test_post_stream_turns_a_refused_connection_into_a_connection_failure() -> None:
    with pytest.raises(UpstreamError) as caught:
        await stream(f"http://127.0.0.1:{free_port()}")
    assert (caught.value.status, caught.value.timeout) == (0, False)
    assert caught.value.message.startswith("connection failed: cannot connect to 127.0.0.1")


async def test_post_stream_turns_a_read_timeout_into_a_timeout(start: Start) -> None:
    server = await start(silent)
    with pytest.raises(UpstreamError) as caught:
        await stream(f"http://127.0.0.1:{server.port}", read_timeout=0.2)
    assert (caught.value.status, caught.value.timeout) == (0, True)
    assert caught.value.message.startswith("timed out: ")


async def test_post_stream_turns_the_deadline_into_a_timeout(start: Start) -> None:
    async def trickle(peer: Peer) -> None:
        await peer.request()
        await peer.send(head(transfer_encoding="chunked") + chunk(b"data: {}\n\n"))
        await peer.until_gone()

    server = await start(trickle)
    with pytest.raises(UpstreamError) as caught:
        await stream(f"http://127.0.0.1:{server.port}", deadline=0.2)
    assert (caught.value.status, caught.value.timeout) == (0, True)
    assert caught.value.message == "no answer within the 0.2 s deadline"
