"""The running server behind a proxy: with HTTP_PROXY set when it starts, its upstream call, its MCP
session and its webhook delivery all go through the proxy (tests/fakes/proxy.py), each named by its host.
The app in this process (tests/inproc.py); the proxy's rules one by one are tests/test_outbound.py's."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.fakes.http import FakeServer
from tests.fakes.mcp_server import serving as serving_mcp
from tests.fakes.openai import openai_text_script
from tests.fakes.proxy import FakeProxy, without_proxies
from tests.webhooks.receivers import Receiver

from .inproc import serving
from .support import new_key

UPSTREAM = "upstream.test"  # a name only the proxy resolves


async def test_every_call_out_goes_through_the_proxy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    without_proxies(monkeypatch)
    with serving_mcp() as mcp:
        hosts = {UPSTREAM: "127.0.0.1", "localhost": "127.0.0.1"}
        async with FakeServer() as upstream, Receiver() as receiver, FakeProxy(hosts=hosts) as proxy:
            monkeypatch.setenv("HTTP_PROXY", proxy.url())
            monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # the test's own calls to the app: direct
            upstream.add(openai_text_script("Hi there"))
            up = upstream.base_url.replace("127.0.0.1", UPSTREAM)
            models = f'[[models]]\nmatch = "gpt-*"\nbackend = "openai"\nbase_url = "{up}/v1"\n'
            tools = [{"type": "mcp_server", "name": "m", "url": f"http://localhost:{mcp.port}/mcp"}]
            hook = receiver.uri.replace("127.0.0.1", "localhost")
            body = {"model": "gpt-4o", "input": "Hi", "tools": tools, "webhook_config": {"uris": [hook]}}
            config = {"webhooks": {"allow": ["localhost"]}}
            async with serving(tmp_path, config=config, models=models) as app:
                headers = {"x-goog-api-key": new_key()}
                async with httpx.AsyncClient(base_url=app.url, headers=headers, timeout=30) as client:
                    reply = await client.post("/v1beta/interactions", json=body)
                assert reply.status_code == 200, reply.text
                assert reply.json()["status"] == "completed", reply.text
                await receiver.wait_for(1)
    assert f"{up}/v1/chat/completions" in proxy.forwarded
    assert f"http://localhost:{mcp.port}/mcp" in proxy.forwarded
    assert hook in proxy.forwarded
    assert {request.headers["host"] for request in upstream.requests} == {up.removeprefix("http://")}
