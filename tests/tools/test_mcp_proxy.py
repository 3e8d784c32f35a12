"""MCP servers through an HTTP proxy (tests/fakes/proxy.py): the url checked by the address guard, then every
request of the session through the proxy (a CONNECT tunnel for https, with the CA bundle; absolute form for
http); a NO_PROXY host keeps the direct path pinned to the checked address."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from server.outbound import Outbound
from server.protocol.tools import McpServerTool
from server.sections import ToolSettings
from server.tools.errors import McpServerUnavailable
from server.tools.mcp import McpSessions
from server.webhooks.addresses import AllowList
from tests.fakes.mcp_server import RunningMcp, serving
from tests.fakes.proxy import FakeProxy
from tests.fakes.tls import CertificateAuthority

#: only the proxies a test sets: none of the machine's (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("no_proxies")

LOOPBACK = AllowList.parse(["127.0.0.0/8"])
SETTINGS = ToolSettings(mcp_call_timeout_seconds=5.0, mcp_connect_timeout_seconds=5.0)
NAME = "mcp.test"


@pytest.fixture(scope="module")
def mcp() -> Iterator[RunningMcp]:
    with serving() as running:
        yield running


async def to_loopback(host: str, port: int) -> list[str]:
    return ["127.0.0.1"]


async def echo(url: str, outbound: Outbound) -> object:
    """One session: connect, list, call `echo`, close."""
    opened = await McpSessions.open(
        [McpServerTool(name="m", url=url)], SETTINGS, LOOPBACK, to_loopback, outbound=outbound
    )
    try:
        return (await opened.call("m", "echo", {"text": "through"})).result
    finally:
        await opened.aclose()


async def test_http_sessions_go_through_the_proxy(mcp: RunningMcp, no_proxies: pytest.MonkeyPatch) -> None:
    async with FakeProxy(hosts={NAME: "127.0.0.1"}) as proxy:
        no_proxies.setenv("HTTP_PROXY", proxy.url())
        assert await echo(f"http://{NAME}:{mcp.port}/mcp", Outbound.from_environment()) == "through"
    assert proxy.forwarded and set(proxy.forwarded) == {f"http://{NAME}:{mcp.port}/mcp"}
    assert proxy.connects == []


async def test_https_sessions_go_in_a_tunnel_and_trust_the_bundle(
    authority: CertificateAuthority, no_proxies: pytest.MonkeyPatch
) -> None:
    with serving(tls=authority.issue(NAME)) as secure:
        url = f"https://{NAME}:{secure.port}/mcp"
        async with FakeProxy(hosts={NAME: "127.0.0.1"}) as proxy:
            no_proxies.setenv("HTTPS_PROXY", proxy.url())
            with pytest.raises(McpServerUnavailable, match="tls: "):
                await echo(url, Outbound.from_environment())
            assert await echo(url, Outbound.from_environment(authority.bundle)) == "through"
    assert proxy.connects and set(proxy.connects) == {f"{NAME}:{secure.port}"}
    assert {seen["host"] for seen in secure.record.headers_seen} == {f"{NAME}:{secure.port}"}


async def test_a_no_proxy_host_is_called_directly_at_the_checked_address(
    mcp: RunningMcp, no_proxies: pytest.MonkeyPatch
) -> None:
    async with FakeProxy() as proxy:
        no_proxies.setenv("HTTP_PROXY", proxy.url())
        no_proxies.setenv("NO_PROXY", NAME)
        # mcp.test resolves only through the guard's resolver: the connection went to the address it gave
        assert await echo(f"http://{NAME}:{mcp.port}/mcp", Outbound.from_environment()) == "through"
    assert proxy.asked == []


async def test_a_proxy_that_refuses_says_so(mcp: RunningMcp, no_proxies: pytest.MonkeyPatch) -> None:
    async with FakeProxy(refuse=407) as proxy:
        no_proxies.setenv("HTTPS_PROXY", proxy.url())
        with pytest.raises(
            McpServerUnavailable, match="is unreachable \\(proxy refused: 407 Refused\\)"
        ) as caught:
            await echo(f"https://{NAME}:{mcp.port}/mcp", Outbound.from_environment())
    assert str(proxy.port) not in str(caught.value)
    assert proxy.connects == [f"{NAME}:{mcp.port}"]
