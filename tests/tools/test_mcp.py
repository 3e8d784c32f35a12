"""server/tools/mcp.py against a real MCP server (tests/fakes/mcp_server.py: the `mcp` package's own server
over Streamable HTTP on 127.0.0.1), driven through the official SDK's client."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import mcp_types
import pytest

from server.errors import InvalidArgument
from server.protocol.tools import McpServerTool
from server.sections import ToolSettings
from server.tools.errors import McpServerUnavailable, McpUrlRefused
from server.tools.mcp import CallResult, McpSessions
from server.tools.results import bounded, shape
from server.webhooks.addresses import AllowList

from ..fakes.mcp_server import RunningMcp, free_port, serving

LOOPBACK = AllowList.parse(["127.0.0.0/8"])
SETTINGS = ToolSettings(mcp_call_timeout_seconds=2.0, mcp_connect_timeout_seconds=5.0, max_result_bytes=2000)
SECRET = "Bearer s3cret-token-do-not-log"


def server(url: str, name: str = "fake", **fields: Any) -> McpServerTool:
    return McpServerTool(name=name, url=url, **fields)


@pytest.fixture
def mcp() -> Iterator[RunningMcp]:
    with serving() as running:
        yield running


@pytest.fixture
async def sessions(mcp: RunningMcp) -> AsyncIterator[McpSessions]:
    opened = await McpSessions.open([server(mcp.url)], SETTINGS, LOOPBACK)
    try:
        yield opened
    finally:
        await opened.aclose()


async def test_open_lists_the_servers_tools(sessions: McpSessions) -> None:
    names = sorted(tool.name for tool in sessions.tools)
    assert names == ["add", "big", "echo", "fail", "slow"]
    add = next(tool for tool in sessions.tools if tool.name == "add")
    assert add.server_name == "fake" and add.description == "Adds two numbers"
    assert add.input_schema["properties"].keys() == {"a", "b"}


@pytest.mark.parametrize(
    ("allowed", "expected"),
    [
        ([{"mode": "auto", "tools": ["echo", "add", "not-there"]}], ["add", "echo"]),
        ([{"tools": ["echo"]}, {"mode": "any", "tools": ["big"]}], ["big", "echo"]),
        ([{"mode": "none", "tools": ["slow", "fail"]}], ["add", "big", "echo"]),
        ([{"mode": "auto"}, {"mode": "none", "tools": ["big"]}], ["add", "echo", "fail", "slow"]),
        ([{"mode": "none"}], []),
        ([], ["add", "big", "echo", "fail", "slow"]),
    ],
)
async def test_allowed_tools_filter(
    mcp: RunningMcp, allowed: list[dict[str, Any]], expected: list[str]
) -> None:
    opened = await McpSessions.open([server(mcp.url, allowed_tools=allowed)], SETTINGS, LOOPBACK)
    try:
        assert sorted(tool.name for tool in opened.tools) == expected
    finally:
        await opened.aclose()


async def test_a_bad_allowed_tools_mode_is_refused(mcp: RunningMcp) -> None:
    tools = [server(mcp.url, allowed_tools=[{"mode": "sometimes"}])]
    with pytest.raises(InvalidArgument) as caught:
        await McpSessions.open(tools, SETTINGS, LOOPBACK)
    assert caught.value.field == "tools[0].allowed_tools[0].mode"


async def test_calls(sessions: McpSessions, mcp: RunningMcp) -> None:
    assert await sessions.call("fake", "add", {"a": 2, "b": 3}) == _result("5")
    assert await sessions.call("fake", "echo", {"text": "hi"}) == _result("hi")
    failed = await sessions.call("fake", "fail", {"message": "boom"})
    assert failed.is_error and "boom" in failed.result
    assert mcp.record.calls == [
        ("add", {"a": 2, "b": 3}),
        ("echo", {"text": "hi"}),
        ("fail", {"message": "boom"}),
    ]


def _result(text: str) -> CallResult:
    return CallResult(text, False)


async def test_unknown_or_withheld_tools_are_not_called(mcp: RunningMcp) -> None:
    tools = [server(mcp.url, allowed_tools=[{"tools": ["echo"]}])]
    opened = await McpSessions.open(tools, SETTINGS, LOOPBACK)
    try:
        for name in ("nope", "add"):
            outcome = await opened.call("fake", name, {})
            assert outcome.is_error and repr(name) in outcome.result
        assert (await opened.call("other", "echo", {"text": "x"})).is_error
    finally:
        await opened.aclose()
    assert mcp.record.calls == []


async def test_a_slow_call_times_out_as_an_error_result(sessions: McpSessions, mcp: RunningMcp) -> None:
    started = time.monotonic()
    outcome = await sessions.call("fake", "slow", {"seconds": 30})
    assert time.monotonic() - started < 5
    assert outcome.is_error and "did not answer within 2 s" in outcome.result
    await _eventually(lambda: mcp.record.slow_outcomes == ["cancelled"] and mcp.record.calls_ended == 1)
    assert await sessions.call("fake", "echo", {"text": "still"}) == _result("still")


async def test_a_large_result_is_cut_with_a_marker(sessions: McpSessions) -> None:
    outcome = await sessions.call("fake", "big", {"size": 10_000})
    assert not outcome.is_error
    assert isinstance(outcome.result, str) and outcome.result.startswith("xxx")
    assert len(outcome.result.encode()) + 2 <= SETTINGS.max_result_bytes
    assert "bytes cut" in outcome.result and "of 10000 bytes" in outcome.result
    small = await sessions.call("fake", "big", {"size": 100})
    assert small.result == "x" * 100


async def test_headers_are_sent_and_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with serving(require=("authorization", SECRET)) as mcp:
        opened = await McpSessions.open(
            [server(mcp.url, headers={"Authorization": SECRET})], SETTINGS, LOOPBACK
        )
        try:
            assert (await opened.call("fake", "echo", {"text": "a"})).result == "a"
            assert (await opened.call("fake", "fail", {"message": "b"})).is_error
            assert (await opened.call("fake", "slow", {"seconds": 10})).is_error
        finally:
            await opened.aclose()
        assert mcp.record.headers_seen and all(
            seen.get("authorization") == SECRET for seen in mcp.record.headers_seen
        )
        # without the header: refused, and the error says so without any header
        with pytest.raises(McpServerUnavailable) as caught:
            await McpSessions.open(
                [server(mcp.url, headers={"Authorization": "Bearer wrong-" + SECRET})], SETTINGS, LOOPBACK
            )
        assert "answered HTTP 401" in str(caught.value) and "'fake'" in str(caught.value)
    assert SECRET not in str(caught.value) and SECRET not in repr(caught.value)
    assert caplog.records, "the run logged nothing at DEBUG: the check would prove nothing"
    for record in caplog.records:
        assert SECRET not in record.getMessage() and SECRET not in str(record.args)
        assert "s3cret" not in (record.exc_text or "")


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:9/mcp", "a loopback address"),
        ("http://169.254.169.254/latest", "the cloud metadata address"),
        ("ftp://example.com/mcp", "must be http:// or https://"),
        ("not a url", "whitespace"),
    ],
)
async def test_refused_urls_name_the_field(url: str, why: str) -> None:
    tools = [server("https://example.com/mcp", name="ok"), server(url, name="bad")]
    with pytest.raises(McpUrlRefused) as caught:
        await McpSessions.open(tools[1:], SETTINGS, AllowList(), indexes=[3])
    assert caught.value.field == "tools[3].url" and why in str(caught.value)


async def test_an_unreachable_server_is_named() -> None:
    port = free_port()
    with pytest.raises(McpServerUnavailable) as caught:
        await McpSessions.open([server(f"http://127.0.0.1:{port}/mcp", name="down")], SETTINGS, LOOPBACK)
    message = str(caught.value)
    assert "'down'" in message and f"127.0.0.1:{port}" in message and "connection refused" in message


async def test_a_server_that_is_not_mcp(mcp: RunningMcp) -> None:
    with pytest.raises(McpServerUnavailable) as caught:
        await McpSessions.open([server(mcp.url.replace("/mcp", "/other"), name="web")], SETTINGS, LOOPBACK)
    assert "'web'" in str(caught.value) and "404" in str(caught.value)


async def test_a_connect_timeout() -> None:
    # a listening socket that never answers: the connect (TCP) succeeds, the MCP handshake never does
    writers: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)

    silent = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    settings = ToolSettings(mcp_connect_timeout_seconds=0.5)
    tasks = set(asyncio.all_tasks())
    try:
        started = time.monotonic()
        with pytest.raises(McpServerUnavailable) as caught:
            await McpSessions.open([server(f"http://127.0.0.1:{port}/mcp", name="mute")], settings, LOOPBACK)
        assert time.monotonic() - started < 5
        assert caught.value.timeout and "'mute'" in str(caught.value)
    finally:
        for writer in writers:
            writer.close()
        silent.close()
        await silent.wait_closed()
    await _eventually(lambda: not (set(asyncio.all_tasks()) - tasks - {asyncio.current_task()}))


async def test_cancel_mid_call_closes_its_request(mcp: RunningMcp) -> None:
    tasks = set(asyncio.all_tasks())
    opened = await McpSessions.open([server(mcp.url)], ToolSettings(mcp_call_timeout_seconds=60), LOOPBACK)
    call = asyncio.create_task(opened.call("fake", "slow", {"seconds": 30}))
    await _eventually(lambda: mcp.record.calls == [("slow", {"seconds": 30})])
    started = time.monotonic()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert time.monotonic() - started < 1
    await _eventually(lambda: mcp.record.slow_outcomes == ["cancelled"] and mcp.record.calls_ended == 1)
    started = time.monotonic()
    await opened.aclose()
    await opened.aclose()
    assert time.monotonic() - started < 5
    await _eventually(lambda: not (set(asyncio.all_tasks()) - tasks - {asyncio.current_task()}))


async def test_aclose_from_a_cancelled_task(mcp: RunningMcp) -> None:
    tasks = set(asyncio.all_tasks())
    opened = await McpSessions.open([server(mcp.url)], SETTINGS, LOOPBACK)

    async def run() -> None:
        try:
            await opened.call("fake", "slow", {"seconds": 30})
        finally:
            await asyncio.shield(opened.aclose())

    task = asyncio.create_task(run())
    await _eventually(lambda: bool(mcp.record.calls))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 10)
    await _eventually(lambda: not (set(asyncio.all_tasks()) - tasks - {asyncio.current_task()}))


async def test_the_connection_goes_to_the_checked_address(mcp: RunningMcp) -> None:
    """A name only our resolver knows: the server is reached at the address it gave, named in Host."""
    asked: list[tuple[str, int]] = []

    async def resolver(host: str, port: int) -> list[str]:
        asked.append((host, port))
        return ["127.0.0.1"]

    url = f"http://mcp.invalid:{mcp.port}/mcp"
    opened = await McpSessions.open([server(url)], SETTINGS, LOOPBACK, resolver)
    try:
        assert (await opened.call("fake", "echo", {"text": "pinned"})).result == "pinned"
    finally:
        await opened.aclose()
    assert asked == [("mcp.invalid", mcp.port)]
    assert {seen["host"] for seen in mcp.record.headers_seen} == {f"mcp.invalid:{mcp.port}"}


async def test_too_many_servers_and_duplicate_names(mcp: RunningMcp) -> None:
    many = [server(mcp.url, name=f"s{n}") for n in range(SETTINGS.max_servers + 1)]
    with pytest.raises(InvalidArgument) as caught:
        await McpSessions.open(many, SETTINGS, LOOPBACK)
    assert caught.value.field == "tools"
    with pytest.raises(InvalidArgument) as caught:
        await McpSessions.open([server(mcp.url), server(mcp.url)], SETTINGS, LOOPBACK)
    assert caught.value.field == "tools[1].name"
    with pytest.raises(InvalidArgument) as caught:
        await McpSessions.open([McpServerTool(url=mcp.url)], SETTINGS, LOOPBACK)
    assert caught.value.field == "tools[0].name"
    assert mcp.record.headers_seen == []


async def test_two_servers_in_one_run(mcp: RunningMcp) -> None:
    with serving() as other:
        opened = await McpSessions.open(
            [server(mcp.url, name="a"), server(other.url, name="b")], SETTINGS, LOOPBACK
        )
        try:
            assert {tool.server_name for tool in opened.tools} == {"a", "b"}
            assert (await opened.call("b", "echo", {"text": "to b"})).result == "to b"
        finally:
            await opened.aclose()
        assert other.record.calls == [("echo", {"text": "to b"})] and mcp.record.calls == []


async def _eventually(check: Any, within: float = 5.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, "not within the time allowed"
        await asyncio.sleep(0.02)


def test_result_shapes_and_bounds() -> None:
    text = mcp_types.TextContent(type="text", text="a")
    image = mcp_types.ImageContent(type="image", data="aGk=", mime_type="image/png")
    both = mcp_types.CallToolResult(content=[text, text])
    assert shape(both) == "a\na"
    mixed = shape(mcp_types.CallToolResult(content=[text, image]))
    assert mixed == [
        {"type": "text", "text": "a"},
        {"type": "image", "data": "aGk=", "mimeType": "image/png"},
    ]
    structured = mcp_types.CallToolResult(content=[], structured_content={"n": 1})
    assert shape(structured) == {"n": 1}
    cut = bounded([{"type": "text", "text": "y" * 500}], 200)
    assert isinstance(cut, str) and cut.startswith('[{"type"') and "bytes cut" in cut
    assert len(json.dumps(cut).encode()) <= 200
    quoted = bounded('"' * 500, 200)  # escaping doubles each byte: still within the bound
    assert len(json.dumps(quoted).encode()) <= 200 and "bytes cut" in quoted
