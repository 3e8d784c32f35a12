"""One MCP server's connection: the SDK's client over Streamable HTTP, owned by a task of its own.

The SDK (`mcp.Client` on `streamable_http_client`) runs on anyio task groups, whose scopes must be left by
the task that entered them, and a failure inside them cancels that task. So each connection lives in its
own asyncio task (`_own`): it connects, lists the tools, then waits to be told to close; calls are made
from the caller's task through the client, and a call cancelled there is abandoned by the SDK (at the
2026-07-28 protocol its POST is closed, which is the cancel; at older ones a `notifications/cancelled` is
sent and the server ends the POST). Closing sets the task's stop event, then cancels it if it is slow to
leave: no task of the connection outlives `close()`.

The HTTP client connects to the addresses the url was checked at (`addresses.check_uri`), never to a
fresh DNS answer: `_Checked` puts the checked address in the request's URL and keeps the host in the Host
header and in TLS's SNI and certificate check, the way webhook deliveries do (webhooks/delivery.py). When
the outbound rules send the url through a proxy (HTTPS_PROXY / HTTP_PROXY, and NO_PROXY does not cover
its host), the url is checked all the same and the request goes to the proxy under the host's name: the
proxy connects, so the pinning is then the proxy's (as for webhooks). The SDK follows no redirect off the
url's origin, and `_Checked` sends nothing to another.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

import httpx2
import mcp_types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from ..outbound import Outbound
from ..webhooks.addresses import CheckedUri
from ..webhooks.delivery import describe
from .errors import McpServerUnavailable
from .selection import Server

#: the longest wait for a connection's task to leave once told to (its DELETE of the session included)
CLOSE_SECONDS: Final = 3.0
#: the pages of tools/list read at most (a server that pages forever cannot hang the connect)
MAX_TOOL_PAGES: Final = 50
#: reads of the standalone event stream wait this long (a call's own wait is bounded by the caller)
READ_SECONDS: Final = 300.0


class _Checked(httpx2.AsyncBaseTransport):
    """Sends requests to the checked origin only: to a checked address of its host, naming the host in
    Host and SNI (`pinned`), or as they are, to the proxy the inner transport goes through."""

    def __init__(self, checked: CheckedUri, inner: httpx2.AsyncBaseTransport, *, pinned: bool) -> None:
        self.checked = checked
        self.inner = inner
        self.pinned = pinned

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        if url.host != self.checked.host or (url.port or _default_port(url.scheme)) != self.checked.port:
            raise httpx2.ConnectError("only the checked origin is called", request=request)
        if not self.pinned:
            return await self.inner.handle_async_request(request)
        failure: httpx2.ConnectError | None = None
        for address in self.checked.addresses:
            request.url = url.copy_with(host=address)
            request.extensions = {**request.extensions, "sni_hostname": self.checked.host}
            try:
                return await self.inner.handle_async_request(request)
            except httpx2.ConnectError as exc:
                failure = exc  # the next address may answer (a host with both IPv4 and IPv6)
            finally:
                request.url = url
        assert failure is not None, "a checked url has at least one address"
        raise failure

    async def aclose(self) -> None:
        await self.inner.aclose()


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


class Connection:
    """A connected server: its client and its tools as listed (all pages), until `close()`."""

    def __init__(self, server: Server, checked: CheckedUri, outbound: Outbound) -> None:
        self.server = server
        self.checked = checked
        self.outbound = outbound
        self.client: Client | None = None
        self.tools: list[mcp_types.Tool] = []
        #: the last HTTP status >= 400 the server answered (what a refused connect is told with)
        self.refused_status: int | None = None
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def connect(self, within: float) -> None:
        """Connected and listed within `within` s, or McpServerUnavailable (and nothing left running)."""
        self._task = asyncio.create_task(self._own(), name=f"mcp:{self.server.name}")
        try:
            async with asyncio.timeout(within):
                await asyncio.shield(self._ready)
        except TimeoutError:
            await self.close()
            raise self.unavailable(f"did not answer within {within:g} s", timeout=True) from None
        except BaseException:
            await self.close()
            raise

    @property
    def alive(self) -> bool:
        return self.client is not None and self._task is not None and not self._task.done()

    async def _own(self) -> None:
        try:
            async with self._http() as http, Client(self._transport(http), mode="auto", cache=None) as client:
                self.tools = await _list_tools(client)
                self.client = client
                self._ready.set_result(None)
                await self._stop.wait()
        except Exception as exc:
            self._fail(self._reason(exc))
        finally:
            self.client = None
            self._fail("closed the connection")

    def _fail(self, reason: str) -> None:
        """The connect fails with `reason`, unless it is over already."""
        if not self._ready.done():
            self._ready.set_exception(self.unavailable(reason))
            self._ready.exception()  # retrieved: nobody may be waiting any more (a connect that timed out)

    def _http(self) -> httpx2.AsyncClient:
        checked = self.checked
        proxy = self.outbound.proxy_for(checked.scheme, checked.host, checked.port)
        inner = httpx2.AsyncHTTPTransport(
            verify=self.outbound.tls_for(checked.scheme),
            trust_env=False,
            proxy=None if proxy is None else httpx2.Proxy(proxy.url),
        )
        # trust_env off: the proxy is the outbound rules' choice, never httpx's own reading of the environment
        return httpx2.AsyncClient(
            headers=self.server.headers,
            timeout=httpx2.Timeout(30.0, read=READ_SECONDS),
            transport=_Checked(checked, inner, pinned=proxy is None),
            trust_env=False,
            follow_redirects=False,
            event_hooks={"response": [self._saw]},
        )

    def _transport(self, http: httpx2.AsyncClient) -> Any:
        return streamable_http_client(self.server.url, http_client=http)

    async def _saw(self, response: httpx2.Response) -> None:
        if response.status_code >= 400:
            self.refused_status = response.status_code

    def _reason(self, exc: BaseException) -> str:
        if self.refused_status is not None:
            return f"answered HTTP {self.refused_status}"
        for cause in _causes(exc):
            if isinstance(cause, MCPError):
                return f"did not answer as an MCP server (error {cause.code})"
            if isinstance(cause, httpx2.ProxyError):
                # its answer to CONNECT, without its address: the caller need not learn this server's network
                return f"is unreachable (proxy refused: {cause})"
        words = describe(exc)
        return "is unreachable" if words == "request failed" else f"is unreachable ({words})"

    def unavailable(self, reason: str, *, timeout: bool = False) -> McpServerUnavailable:
        return McpServerUnavailable(self.server.name, self.checked.authority, reason, timeout=timeout)

    async def close(self) -> None:
        """Tell the task to leave; cancel it if it takes longer than CLOSE_SECONDS. Never raises."""
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        try:
            done, _ = await asyncio.wait([task], timeout=CLOSE_SECONDS)
            if not done:
                task.cancel()
                await asyncio.wait([task], timeout=CLOSE_SECONDS)
        finally:
            if not task.done():
                task.cancel()


async def _list_tools(client: Client) -> list[mcp_types.Tool]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def _causes(exc: BaseException) -> list[BaseException]:
    found: list[BaseException] = []
    stack = [exc]
    while stack and len(found) < 50:
        current = stack.pop()
        found.append(current)
        if isinstance(current, BaseExceptionGroup):
            stack.extend(current.exceptions)
        stack.extend(linked for linked in (current.__cause__, current.__context__) if linked is not None)
    return found
