"""The upstream client through an HTTP proxy (tests/fakes/proxy.py) and with a CA bundle: https in a CONNECT
tunnel with TLS to the origin's name, http in absolute form, the proxy's credentials, NO_PROXY, a 407 as
the error a user can act on, and a TLS upstream signed by a CA only the configured bundle trusts."""

from __future__ import annotations

import asyncio
import time

import msgspec
import pytest
import uvloop

from server.outbound import Outbound
from server.settings import ModelRoute
from server.upstream.base import UpstreamError
from server.upstream.http1 import ConnectFailed
from server.upstream.transport import UpstreamClient, post_stream
from tests.fakes.proxy import FakeProxy
from tests.fakes.tls import CertificateAuthority

from .raw_http import (
    Peer,
    RawServer,
    Start,
    answer_each,
    body,
    chunk,
    eventually,
    free_port,
    head,
    post,
    servers,
    sized,
)
from .raw_http import client as new_client

#: only the proxies a test sets: none of the machine's (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("no_proxies")

NAME = "upstream.test"  # a name only the proxy resolves (to 127.0.0.1)


def proxy_of(monkeypatch: pytest.MonkeyPatch, proxy: FakeProxy, userinfo: str = "") -> None:
    monkeypatch.setenv("HTTPS_PROXY", proxy.url(userinfo))
    monkeypatch.setenv("HTTP_PROXY", proxy.url(userinfo))


async def tls_server(
    start: Start, authority: CertificateAuthority, name: str = NAME
) -> tuple[RawServer, list[str]]:
    """A TLS upstream whose certificate names `name`, and the SNI names it was asked for."""
    names: list[str] = []
    context = authority.server_tls(name)
    context.sni_callback = lambda _socket, sni, _context: names.append(sni) if sni else None
    return await start(lambda peer: answer_each(peer, sized(b"secret")), tls=context), names


async def test_https_goes_in_a_tunnel_with_tls_to_the_origin_and_the_tunnel_is_kept(
    start: Start, authority: CertificateAuthority, no_proxies: pytest.MonkeyPatch
) -> None:
    server, names = await tls_server(start, authority)
    async with FakeProxy(hosts={NAME: "127.0.0.1"}) as proxy:
        proxy_of(no_proxies, proxy)
        async with new_client(outbound=Outbound.from_environment(authority.bundle)) as client:
            for _ in range(2):
                assert await body(await post(client, f"https://{NAME}:{server.port}/v1/x")) == b"secret"
    assert proxy.connects == [f"{NAME}:{server.port}"]  # one tunnel for both: pooled
    assert (server.connections, names) == (1, [NAME])
    assert [r.line for r in server.requests] == ["POST /v1/x HTTP/1.1"] * 2
    assert server.requests[0].header("host") == f"{NAME}:{server.port}"


async def test_closing_a_response_early_through_the_tunnel_reaches_the_upstream(
    start: Start, authority: CertificateAuthority, no_proxies: pytest.MonkeyPatch
) -> None:
    """How a cancel stops generation: the tunnel closes, and the proxy closes its side to the upstream."""

    async def trickle(peer: Peer) -> None:
        await peer.request()
        await peer.send(head(transfer_encoding="chunked") + chunk(b"first"))
        await peer.until_gone()

    server = await start(trickle, tls=authority.server_tls(NAME))
    async with FakeProxy(hosts={NAME: "127.0.0.1"}) as proxy:
        proxy_of(no_proxies, proxy)
        async with new_client(outbound=Outbound.from_environment(authority.bundle)) as client:
            response = await post(client, f"https://{NAME}:{server.port}/v1/x")
            assert await response.chunk() == b"first"
            closed = time.monotonic()
            response.close()
            assert await eventually(lambda: len(server.gone) == 1, within=1.0)
    assert server.gone[0] - closed < 0.2


async def test_an_unknown_ca_fails_and_the_configured_bundle_makes_it_work(
    start: Start, authority: CertificateAuthority, no_proxies: pytest.MonkeyPatch
) -> None:
    server, _ = await tls_server(start, authority, "127.0.0.1")
    url = f"https://127.0.0.1:{server.port}/v1/x"
    async with new_client(outbound=Outbound()) as client:
        with pytest.raises(ConnectFailed, match="CERTIFICATE_VERIFY_FAILED"):
            await post(client, url)
    async with new_client(outbound=Outbound(ca_bundle=authority.bundle)) as client:
        assert await body(await post(client, url)) == b"secret"
    # the same through a tunnel
    async with FakeProxy() as proxy:
        proxy_of(no_proxies, proxy)
        async with new_client(outbound=Outbound.from_environment()) as client:
            with pytest.raises(ConnectFailed, match=f"through the proxy {proxy.url()}: .*CERTIFICATE_VERIFY"):
                await post(client, url)
        async with new_client(outbound=Outbound.from_environment(authority.bundle)) as client:
            assert await body(await post(client, url)) == b"secret"
    assert len(proxy.connects) == 2 and len(server.requests) == 2


async def test_the_certificate_is_checked_against_the_origins_name_not_the_proxys(
    start: Start, authority: CertificateAuthority, no_proxies: pytest.MonkeyPatch
) -> None:
    server, _ = await tls_server(start, authority, "other.test")
    async with FakeProxy(hosts={NAME: "127.0.0.1"}) as proxy:
        proxy_of(no_proxies, proxy)
        async with new_client(outbound=Outbound.from_environment(authority.bundle)) as client:
            with pytest.raises(ConnectFailed, match="Hostname mismatch"):
                await post(client, f"https://{NAME}:{server.port}/v1/x")
    assert server.requests == []


async def test_http_goes_in_absolute_form_and_credentials_go_to_the_proxy(
    start: Start, no_proxies: pytest.MonkeyPatch
) -> None:
    server = await start(lambda peer: answer_each(peer, sized(b"plain")))
    async with FakeProxy(credentials="us@er:pw", hosts={NAME: "127.0.0.1"}) as proxy:
        proxy_of(no_proxies, proxy, "us%40er:pw")
        async with new_client(outbound=Outbound.from_environment()) as client:
            assert await body(await post(client, f"http://{NAME}:{server.port}/v1/x?a=b")) == b"plain"
    [asked] = proxy.asked
    assert (asked.method, asked.target) == ("POST", f"http://{NAME}:{server.port}/v1/x?a=b")
    assert asked.authorization == "Basic dXNAZXI6cHc="  # us@er:pw
    [request] = server.requests
    assert (request.line, request.header("host")) == ("POST /v1/x?a=b HTTP/1.1", f"{NAME}:{server.port}")


async def test_a_get_without_a_body_goes_in_absolute_form_too(
    start: Start, no_proxies: pytest.MonkeyPatch
) -> None:
    """A remote run's follow (GET, no body, no Content-Length) through the proxy."""
    server = await start(lambda peer: answer_each(peer, sized(b"events")))
    async with FakeProxy(hosts={NAME: "127.0.0.1"}) as proxy:
        proxy_of(no_proxies, proxy)
        client = UpstreamClient(ModelRoute(match="*", backend="interactions"), Outbound.from_environment())
        url = f"http://{NAME}:{server.port}/v1beta/interactions/v1_x?stream=true"
        try:
            got = [
                piece
                async for piece in post_stream(
                    client, "interactions", url, {}, None, deadline_seconds=5, method="GET"
                )
            ]
        finally:
            await client.aclose()
    assert b"".join(got) == b"events"
    [asked] = proxy.asked
    assert (asked.method, asked.target) == ("GET", url)
    [request] = server.requests
    assert request.line == "GET /v1beta/interactions/v1_x?stream=true HTTP/1.1"
    assert request.header("content-length") is None


async def test_no_proxy_hosts_are_called_directly(start: Start, no_proxies: pytest.MonkeyPatch) -> None:
    server = await start(lambda peer: answer_each(peer, sized(b"direct")))
    async with FakeProxy() as proxy:
        proxy_of(no_proxies, proxy)
        no_proxies.setenv("no_proxy", "example.com,127.0.0.0/8")
        async with new_client(outbound=Outbound.from_environment()) as client:
            assert await body(await post(client, server.url())) == b"direct"
    assert proxy.asked == []


class Ask(msgspec.Struct):
    model: str


async def stream(url: str, outbound: Outbound) -> list[bytes]:
    client = UpstreamClient(ModelRoute(match="*", backend="openai", connect_timeout_seconds=2.0), outbound)
    try:
        return [piece async for piece in post_stream(client, "openai", url, {}, Ask("m"), deadline_seconds=5)]
    finally:
        await client.aclose()


@pytest.mark.parametrize("scheme", ["https", "http"])
async def test_a_407_is_an_error_naming_the_proxy_without_its_credentials(
    scheme: str, no_proxies: pytest.MonkeyPatch
) -> None:
    async with FakeProxy(credentials="user:right") as proxy:
        proxy_of(no_proxies, proxy, "user:wrong-secret")
        with pytest.raises(UpstreamError) as caught:
            await stream(f"{scheme}://{NAME}:{free_port()}/v1/chat", Outbound.from_environment())
    error = caught.value
    assert (error.misconfigured, error.retryable) == (True, False)
    what = "tunnel" if scheme == "https" else "request"
    assert f"the proxy {proxy.url()} refused the {what} to {NAME}:" in error.message
    assert ": 407 " in error.message and "wrong-secret" not in str(error)


async def test_a_proxy_that_cannot_reach_the_origin_or_is_down_is_a_retryable_failure(
    no_proxies: pytest.MonkeyPatch,
) -> None:
    async with FakeProxy(refuse=502) as proxy:
        proxy_of(no_proxies, proxy)
        with pytest.raises(UpstreamError) as caught:
            await stream(f"https://{NAME}/v1/chat", Outbound.from_environment())
    assert (caught.value.misconfigured, caught.value.retryable) == (False, True)
    assert f"refused the tunnel to {NAME}:443: 502" in caught.value.message
    no_proxies.setenv("HTTPS_PROXY", f"http://127.0.0.1:{free_port()}")
    with pytest.raises(
        UpstreamError, match=r"connection failed: cannot connect to the proxy http://127\.0\.0\.1:"
    ):
        await stream(f"https://{NAME}/v1/chat", Outbound.from_environment())


def test_the_tunnel_under_uvloop(authority: CertificateAuthority, no_proxies: pytest.MonkeyPatch) -> None:
    """The web processes run uvloop (granian's Loops.uvloop), whose start_tls is its own."""

    async def run() -> tuple[bytes, list[str], int]:
        async with servers() as start:
            server, _names = await tls_server(start, authority)
            async with FakeProxy(hosts={NAME: "127.0.0.1"}) as proxy:
                proxy_of(no_proxies, proxy)
                async with new_client(outbound=Outbound.from_environment(authority.bundle)) as client:
                    got = [
                        await body(await post(client, f"https://{NAME}:{server.port}/v1/x")) for _ in range(2)
                    ]
            return b"".join(got), proxy.connects, server.connections

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        got, connects, connections = runner.run(run())
    assert (got, len(connects), connections) == (b"secretsecret", 1, 1)
