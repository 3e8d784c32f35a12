"""Webhook deliveries through an HTTP proxy (tests/fakes/proxy.py) and with a CA bundle: the URI is still
checked by the address guard, then the proxy connects (a CONNECT tunnel for https, absolute form for
http); a NO_PROXY host keeps the pinned direct path."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import pytest

from server.outbound import Outbound
from server.webhooks.addresses import AllowList
from server.webhooks.delivery import Attempt, deliver
from tests.fakes.proxy import FakeProxy
from tests.fakes.tls import CertificateAuthority
from tests.upstream.raw_http import Peer, RawServer, Start, servers, sized

#: only the proxies a test sets: none of the machine's (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("no_proxies")

LOOPBACK = AllowList.parse(["127.0.0.0/8"])
NAME = "receiver.test"


@pytest.fixture
async def start() -> AsyncIterator[Start]:
    async with servers() as start:
        yield start


async def to_loopback(host: str, port: int) -> Sequence[str]:
    """What the address guard resolves the receiver's name to (a private address the allow-list admits)."""
    return ["127.0.0.1"]


async def answer(peer: Peer) -> None:
    if await peer.request() is not None:
        await peer.send(sized(b"", 204, "No Content"))


async def send(uri: str, outbound: Outbound, allow: AllowList = LOOPBACK) -> Attempt:
    return await deliver(
        uri, {"webhook-id": "msg_1"}, b"{}", allow=allow, resolver=to_loopback, outbound=outbound
    )


async def tls_receiver(start: Start, authority: CertificateAuthority) -> tuple[RawServer, list[str]]:
    names: list[str] = []
    context = authority.server_tls(NAME)
    context.sni_callback = lambda _socket, sni, _context: names.append(sni) if sni else None
    return await start(answer, tls=context), names


async def test_https_goes_through_the_proxy_and_trusts_the_bundle(
    start: Start, authority: CertificateAuthority, no_proxies: pytest.MonkeyPatch
) -> None:
    server, names = await tls_receiver(start, authority)
    uri = f"https://{NAME}:{server.port}/hook"
    async with FakeProxy(hosts={NAME: "127.0.0.1"}) as proxy:
        no_proxies.setenv("HTTPS_PROXY", proxy.url())
        unknown = await send(uri, Outbound.from_environment())
        assert unknown.error is not None and unknown.error.startswith("tls: "), unknown.error
        outcome = await send(uri, Outbound.from_environment(authority.bundle))
    assert (outcome.delivered, outcome.status_code) == (True, 204)
    assert proxy.connects == [f"{NAME}:{server.port}"] * 2
    assert names == [NAME, NAME]
    assert [r.header("host") for r in server.requests] == [f"{NAME}:{server.port}"]


async def test_http_goes_to_the_proxy_in_absolute_form(start: Start, no_proxies: pytest.MonkeyPatch) -> None:
    server = await start(answer)
    async with FakeProxy(hosts={NAME: "127.0.0.1"}) as proxy:
        no_proxies.setenv("http_proxy", proxy.url())
        outcome = await send(f"http://{NAME}:{server.port}/hook?a=1", Outbound.from_environment())
    assert (outcome.delivered, outcome.error) == (True, None)
    assert proxy.forwarded == [f"http://{NAME}:{server.port}/hook?a=1"]
    assert server.requests[0].line == "POST /hook?a=1 HTTP/1.1"


async def test_a_no_proxy_host_is_delivered_directly_to_the_checked_address(
    start: Start, no_proxies: pytest.MonkeyPatch
) -> None:
    server = await start(answer)
    async with FakeProxy() as proxy:
        no_proxies.setenv("HTTP_PROXY", proxy.url())
        no_proxies.setenv("NO_PROXY", ".test")
        # receiver.test resolves only through the guard's resolver: the connection went to its answer
        outcome = await send(f"http://{NAME}:{server.port}/hook", Outbound.from_environment())
    assert (outcome.delivered, proxy.asked) == (True, [])
    assert server.requests[0].header("host") == f"{NAME}:{server.port}"


async def test_the_address_guard_still_refuses_before_the_proxy_is_asked(
    no_proxies: pytest.MonkeyPatch,
) -> None:
    async with FakeProxy() as proxy:
        no_proxies.setenv("HTTPS_PROXY", proxy.url())
        outcome = await send(f"https://{NAME}/hook", Outbound.from_environment(), allow=AllowList())
    assert outcome.error == "refused: resolves to 127.0.0.1, a loopback address"
    assert proxy.asked == []


async def test_a_407_is_a_failed_attempt_that_says_so_and_not_where(no_proxies: pytest.MonkeyPatch) -> None:
    async with FakeProxy(credentials="user:right") as proxy:
        no_proxies.setenv("HTTPS_PROXY", proxy.url("user:wrong"))
        outcome = await send(f"https://{NAME}/hook", Outbound.from_environment())
    assert (outcome.delivered, outcome.status_code) == (False, None)
    assert outcome.error is not None and outcome.error.startswith("proxy refused: 407"), outcome.error
    assert str(proxy.port) not in outcome.error
    assert proxy.connects == [f"{NAME}:443"]
