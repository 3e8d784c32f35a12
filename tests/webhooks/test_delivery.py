"""One delivery attempt (`server/webhooks/delivery.py`) against real receivers on 127.0.0.1 (allow-listed):
what arrives, how each failure is named, and what is not done (redirects, reading a huge body)."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from server.outbound import Outbound
from server.webhooks import delivery
from server.webhooks.addresses import AllowList, Resolver, system_resolver
from server.webhooks.delivery import Attempt, deliver
from tests.upstream.raw_http import Peer, Start, eventually, free_port, head, servers, silent, sized

LOOPBACK = AllowList.parse(["127.0.0.0/8"])
BODY = bytes(range(256)) * 3 + '{"type": "interaction.completed", "é": "\u2028"}'.encode()


@pytest.fixture
async def start() -> AsyncIterator[Start]:
    async with servers() as start:
        yield start


def resolves_to(*addresses: str) -> Resolver:
    async def resolve(host: str, port: int) -> Sequence[str]:
        return addresses

    return resolve


async def post(
    uri: str,
    within: float = 5.0,
    *,
    allow: AllowList = LOOPBACK,
    resolver: Resolver = system_resolver,
    outbound: Outbound | None = None,
) -> Attempt:
    # no Content-Type: deliver() says the body is JSON itself (receivers select on it)
    headers = {"webhook-id": "msg_1", "webhook-timestamp": "1767225600"}
    outbound = outbound if outbound is not None else Outbound()  # no proxy of the machine's
    return await deliver(
        uri, headers, BODY, allow=allow, resolver=resolver, timeout_seconds=within, outbound=outbound
    )


async def answer(peer: Peer, response: bytes) -> None:
    if await peer.request() is not None:
        await peer.send(response)


async def test_a_2xx_is_delivered_with_the_host_headers_and_body_as_sent(start: Start) -> None:
    server = await start(lambda peer: answer(peer, sized(b"ok", 204, "No Content")))
    uri = f"http://Receiver.Test:{server.port}/hooks/a?b=c"
    outcome = await post(uri, resolver=resolves_to("127.0.0.1"))
    assert (outcome.delivered, outcome.status_code, outcome.error) == (True, 204, None)
    assert 0 < outcome.latency_ms < 5000
    assert abs(outcome.time.timestamp() - time.time()) < 5
    [request] = server.requests
    assert request.line == "POST /hooks/a?b=c HTTP/1.1"
    assert request.header("host") == f"receiver.test:{server.port}"
    assert request.header("content-type") == "application/json"
    assert (request.header("webhook-id"), request.header("webhook-timestamp")) == ("msg_1", "1767225600")
    assert request.header("user-agent") == delivery.USER_AGENT
    assert request.body == BODY


async def test_a_500_is_a_failed_attempt_named_by_its_status(start: Start) -> None:
    server = await start(lambda peer: answer(peer, sized(b"boom", 500, "Internal Server Error")))
    outcome = await post(server.url())
    assert (outcome.delivered, outcome.status_code, outcome.error) == (False, 500, "status 500")


async def test_a_redirect_is_not_followed(start: Start) -> None:
    elsewhere = await start(lambda peer: answer(peer, sized(b"")))
    moved = sized(b"", 302, "Found", location=elsewhere.url("/moved"))
    server = await start(lambda peer: answer(peer, moved))
    outcome = await post(server.url())
    assert (outcome.delivered, outcome.status_code, outcome.error) == (False, 302, "redirect 302")
    assert (len(server.requests), elsewhere.requests) == (1, [])


async def test_a_receiver_that_never_answers_times_out_within_the_bound(start: Start) -> None:
    server = await start(silent)
    began = time.monotonic()
    outcome = await post(server.url(), within=0.3)
    took = time.monotonic() - began
    assert (outcome.delivered, outcome.status_code, outcome.error) == (False, None, "timeout")
    assert 0.25 < took < 1.0, took
    assert await eventually(lambda: len(server.gone) == 1)  # and the connection was closed


async def test_a_receiver_that_is_down_is_connection_refused() -> None:
    outcome = await post(f"http://127.0.0.1:{free_port()}/hook")
    assert (outcome.delivered, outcome.status_code, outcome.error) == (False, None, "connection refused")


async def test_the_next_checked_address_is_tried_when_one_refuses(start: Start) -> None:
    server = await start(lambda peer: answer(peer, sized(b"")))
    outcome = await post(
        f"http://receiver.test:{server.port}/", resolver=resolves_to("127.0.0.2", "127.0.0.1")
    )
    assert (outcome.delivered, len(server.requests)) == (True, 1)


async def test_a_huge_body_is_not_read(start: Start) -> None:
    total, sent, ended = 256 * 1024 * 1024, [0], asyncio.Event()

    async def flood(peer: Peer) -> None:
        try:
            if await peer.request() is not None:
                await peer.send(head(200, content_length=str(total)))
                piece = b"x" * 65536
                while sent[0] < total:
                    await peer.send(piece)
                    sent[0] += len(piece)
        finally:
            ended.set()

    server = await start(flood)
    began = time.monotonic()
    outcome = await post(server.url())
    assert (outcome.delivered, outcome.status_code) == (True, 200)
    assert time.monotonic() - began < 2.0  # the wait for a body is bounded (1 s)
    await asyncio.wait_for(ended.wait(), 5.0)  # our side closed: the receiver's writes failed
    assert sent[0] < total // 16, sent[0]


async def test_a_body_that_stalls_after_the_head_does_not_hold_the_attempt(start: Start) -> None:
    async def stall(peer: Peer) -> None:
        if await peer.request() is not None:
            await peer.send(head(200, content_length="100") + b"partial")
            await peer.until_gone()

    server = await start(stall)
    began = time.monotonic()
    outcome = await post(server.url(), within=10.0)
    assert (outcome.delivered, outcome.error) == (True, None)
    assert time.monotonic() - began < 2.0  # the wait for a body is bounded (1 s)
    assert outcome.latency_ms < 1000  # to the head, not to the end of the wait for the body
    assert await eventually(lambda: len(server.gone) == 1)


async def test_refused_and_unresolved_uris_are_failed_attempts_without_a_connection(start: Start) -> None:
    server = await start(lambda peer: answer(peer, sized(b"")))
    outcome = await post(server.url(), allow=AllowList())
    assert (outcome.delivered, outcome.status_code) == (False, None)
    assert outcome.error == "refused: is a loopback address"
    rebound = await post(
        f"http://receiver.test:{server.port}/", allow=AllowList(), resolver=resolves_to("10.0.0.1")
    )
    assert rebound.error == "refused: resolves to 10.0.0.1, a private address"
    assert (await post("ftp://receiver.test/")).error == "refused: must be http:// or https://, not ftp:"
    unresolved = await post("http://receiver.invalid/", resolver=resolves_to())
    assert unresolved.error == "dns: resolves to no address"
    assert server.connections == 0


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A self-signed certificate for the name receiver.test (not for 127.0.0.1); its key beside it, k.pem."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl CLI is not on PATH: no certificate to serve TLS with")
    where = tmp_path_factory.mktemp("tls")
    command = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
    command += ["-subj", "/CN=receiver.test", "-addext", "subjectAltName=DNS:receiver.test"]
    subprocess.run(
        [*command, "-keyout", "k.pem", "-out", "c.pem"], cwd=where, check=True, capture_output=True
    )
    return where / "c.pem"


async def test_https_connects_to_the_address_and_checks_the_host_name(start: Start, cert: Path) -> None:
    names: list[str | None] = []
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(cert, cert.with_name("k.pem"))
    served.sni_callback = lambda _socket, name, _context: names.append(name)
    server = await start(lambda peer: answer(peer, sized(b"")), tls=served)
    trusted = Outbound(ca_bundle=cert)
    to_loopback = resolves_to("127.0.0.1")
    outcome = await post(f"https://receiver.test:{server.port}/h", resolver=to_loopback, outbound=trusted)
    assert (outcome.delivered, outcome.error) == (True, None)
    assert names == ["receiver.test"]
    assert server.requests[0].header("host") == f"receiver.test:{server.port}"
    # the same receiver under a name its certificate does not carry
    wrong = await post(f"https://other.test:{server.port}/h", resolver=to_loopback, outbound=trusted)
    assert (wrong.delivered, wrong.status_code) == (False, None)
    assert wrong.error is not None and wrong.error.startswith("tls: Hostname mismatch"), wrong.error
    untrusted = await post(f"https://receiver.test:{server.port}/h", resolver=to_loopback)
    assert untrusted.error is not None and untrusted.error.startswith("tls: "), untrusted.error
    assert len(server.requests) == 1
