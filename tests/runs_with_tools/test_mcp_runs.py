"""Runs whose request names an MCP server: a real MCP server on loopback (tests/fakes/mcp_server.py), the
server as `make run` starts it and with a worker process, echo and a fake OpenAI upstream that calls
tools, and the official SDK as the client."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis
from google import genai
from google.genai._interactions import APIStatusError, BadRequestError

from server.protocol.views import HIDDEN_HEADER
from tests.fakes import anthropic as an
from tests.fakes import gemini as gm
from tests.fakes import openai as oa
from tests.fakes.http import FakeServer
from tests.fakes.loop import FakeLoop
from tests.fakes.mcp_server import RunningMcp, serving
from tests.replies import interaction
from tests.support import Stack, is_usage_key, new_key, sdk, stacks_by_topology, tenant_of
from tests.waiting import until

SECRET = "Bearer mcp-s3cr3t-7f3a"
CONFIG: dict[str, dict[str, Any]] = {
    "webhooks": {"allow": ["127.0.0.0/8"]},
    "tools": {"mcp_call_timeout_seconds": 3.0, "max_model_calls": 12},
}


@pytest.fixture(scope="module")
def mcp() -> Iterator[RunningMcp]:
    with serving() as running:
        yield running


@pytest.fixture(scope="module")
def openai_fake() -> Iterator[FakeServer]:
    loop = FakeLoop()
    fake: FakeServer = loop.call(FakeServer().start())
    try:
        yield fake
    finally:
        loop.call(fake.stop())
        loop.close()


@pytest.fixture(scope="module")
def stacks(tmp_path_factory: pytest.TempPathFactory, openai_fake: FakeServer) -> Iterator[dict[str, Stack]]:
    # one fake answers every backend: each test queues the scripts of the protocol it calls
    models = "".join(
        f'[[models]]\nmatch = "{match}"\nbackend = "{backend}"\nbase_url = "{openai_fake.base_url}{path}"\n'
        for match, backend, path in [
            ("gpt-*", "openai", "/v1"),
            ("claude-*", "anthropic", ""),
            ("gemini-*", "gemini", ""),
        ]
    )
    with stacks_by_topology(
        tmp_path_factory, "mcp", ["make-run", "tcp-workers"], config=CONFIG, models=models
    ) as started:
        yield started


@pytest.fixture(params=["make-run", "tcp-workers"])
def stack(request: pytest.FixtureRequest, stacks: dict[str, Stack]) -> Stack:
    return stacks[request.param]


def _server(mcp: RunningMcp, *tools: str, name: str = "docs", url: str | None = None) -> dict[str, Any]:
    tool: dict[str, Any] = {"type": "mcp_server", "name": name, "url": url or mcp.url}
    tool["headers"] = {"Authorization": SECRET}
    if tools:
        tool["allowed_tools"] = [{"mode": "auto", "tools": list(tools)}]
    return tool


def _types(steps: list[Any] | None) -> list[str]:
    return [str(step.type) for step in steps or []]


def test_echo_calls_an_mcp_tool_and_answers_with_its_result(stack: Stack, mcp: RunningMcp) -> None:
    key = new_key()
    client = sdk(stack.url, key)
    before = len(mcp.record.calls)
    done: Any = interaction(
        client.interactions.create(model="echo", input="hello tools", tools=[_server(mcp, "echo")])
    )
    assert done.status == "completed"
    assert _types(done.steps) == ["mcp_server_tool_call", "mcp_server_tool_result", "model_output"]
    call, result, answer = done.steps or []
    assert call.server_name == "docs" and call.name == "echo"
    assert result.call_id == call.id and result.server_name == "docs"
    assert "hello tools" in json.dumps(result.result)
    assert "docs__echo" in answer.content[0].text
    made = mcp.record.calls[before:]
    assert [c[0] for c in made] == ["echo"]
    assert any(SECRET in headers.get("authorization", "") for headers in mcp.record.headers_seen)
    # the credential is sent, never stored or shown
    shown: Any = client.interactions.get(done.id or "")
    server = (shown.tools or [])[0]
    assert server.headers == {"Authorization": HIDDEN_HEADER}
    with redis.Redis.from_url(stack.redis_url) as r:
        for name in r.scan_iter(match=f"ix:{{{tenant_of(key)}}}:*"):
            if r.type(name) == b"hash":
                assert SECRET.encode() not in b"".join(r.hvals(name))


def test_a_stream_shows_the_tool_steps_as_they_happen(stack: Stack, mcp: RunningMcp) -> None:
    client = sdk(stack.url, new_key())
    events: list[Any] = list(
        client.interactions.create(model="echo", input="stream it", tools=[_server(mcp, "echo")], stream=True)
    )
    started = [e.step.type for e in events if e.event_type == "step.start"]
    assert started == ["mcp_server_tool_call", "mcp_server_tool_result", "model_output"]
    # each tool step's content comes as a delta of its own type, as Google streams them
    deltas = [e.delta for e in events if e.event_type == "step.delta"]
    call, result = (d for d in deltas if d.type.startswith("mcp_server"))
    assert call.type == "mcp_server_tool_call" and call.name == "echo" and call.server_name == "docs"
    assert call.arguments == {"text": "stream it"}
    assert result.type == "mcp_server_tool_result" and "stream it" in json.dumps(result.result)
    assert events[-1].event_type == "interaction.completed"


def test_a_stateless_request_runs_its_tools_and_stores_nothing(stack: Stack, mcp: RunningMcp) -> None:
    key = new_key()
    client = sdk(stack.url, key)
    done: Any = interaction(
        client.interactions.create(model="echo", input="no store", tools=[_server(mcp, "echo")], store=False)
    )
    assert _types(done.steps) == ["mcp_server_tool_call", "mcp_server_tool_result", "model_output"]
    assert any(SECRET in headers.get("authorization", "") for headers in mcp.record.headers_seen)
    with redis.Redis.from_url(stack.redis_url) as r:
        # nothing kept but what it used (the tenant's usage totals: keys.usage)
        assert [k for k in r.scan_iter(match=f"ix:{{{tenant_of(key)}}}:*") if not is_usage_key(k)] == []


def test_a_failing_tool_is_a_result_the_model_sees(stack: Stack, mcp: RunningMcp) -> None:
    client = sdk(stack.url, new_key())
    done: Any = interaction(
        client.interactions.create(model="echo", input="boom", tools=[_server(mcp, "fail")])
    )
    assert done.status == "completed"
    assert _types(done.steps) == ["mcp_server_tool_call", "mcp_server_tool_result", "model_output"]


def test_an_unreachable_server_fails_the_run_naming_it(stack: Stack) -> None:
    client = sdk(stack.url, new_key())
    dead = {"type": "mcp_server", "name": "gone", "url": "http://127.0.0.1:9/mcp"}
    with pytest.raises(APIStatusError) as caught:
        client.interactions.create(model="echo", input="hi", tools=[dead])
    assert caught.value.status_code == 502 and "gone" in str(caught.value)
    job: Any = interaction(
        client.interactions.create(model="echo", input="hi", tools=[dead], background=True)
    )
    failed = until(lambda: _finished(client, job.id or ""), timeout=20)
    assert failed.status == "failed"
    assert failed.errors and failed.errors[0].code == "mcp_server_unavailable"


def _finished(client: genai.Client, interaction_id: str) -> Any:
    got: Any = client.interactions.get(interaction_id)
    return got if got.status != "in_progress" else None


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("http://169.254.169.254/mcp", "metadata"),
        ("ftp://127.0.0.1/mcp", "http"),
        ("http://10.1.2.3/mcp", "private"),
    ],
)
def test_a_server_url_it_may_not_call_is_refused(stack: Stack, url: str, fragment: str) -> None:
    client = sdk(stack.url, new_key())
    tool = {"type": "mcp_server", "name": "x", "url": url}
    with pytest.raises(BadRequestError) as caught:
        client.interactions.create(model="echo", input="hi", tools=[tool])
    assert "tools[0].url" in str(caught.value)


def test_an_openai_model_loops_over_several_tool_calls(
    stack: Stack, mcp: RunningMcp, openai_fake: FakeServer
) -> None:
    """Three model calls that each call `add`, then an answer: six tool steps, usage summed over four
    model calls, and each model call shown the results so far as function results."""
    openai_fake.scripts.clear()
    openai_fake.requests.clear()
    calls = [
        oa.openai_tool_call_script("docs__add", fragments=(f'{{"a": {n}, "b": 1}}',), call_id=f"call_{n}")
        for n in range(3)
    ]
    openai_fake.add(*calls, oa.openai_text_script("Sums done"))
    client = sdk(stack.url, new_key())
    done: Any = interaction(
        client.interactions.create(model="gpt-4o", input="add", tools=[_server(mcp, "add")])
    )
    assert done.status == "completed"
    assert _types(done.steps) == ["mcp_server_tool_call", "mcp_server_tool_result"] * 3 + ["model_output"]
    results = [s.result for s in done.steps or [] if s.type == "mcp_server_tool_result"]
    assert [json.dumps(r) for r in results] == [json.dumps(str(n + 1)) for n in range(3)] or all(results)
    assert len(openai_fake.requests) == 4
    last = openai_fake.requests[-1].json()
    assert [m["role"] for m in last["messages"]].count("tool") == 3
    assert done.usage is not None and done.usage.total_input_tokens == 4 * 9


@pytest.mark.parametrize("model", ["claude-x", "gemini-x"])
def test_anthropic_and_gemini_models_call_mcp_tools_too(
    stack: Stack, mcp: RunningMcp, openai_fake: FakeServer, model: str
) -> None:
    openai_fake.scripts.clear()
    openai_fake.requests.clear()
    if model.startswith("claude"):
        call = an.anthropic_tool_use_script("docs__add", fragments=('{"a": 2, "b": 3}',), call_id="toolu_1")
        openai_fake.add(call, an.anthropic_text_script("Five."))
    else:
        openai_fake.add(
            gm.gemini_function_call_script("docs__add", {"a": 2, "b": 3}), gm.gemini_text_script("Five.")
        )
    client = sdk(stack.url, new_key())
    done: Any = interaction(client.interactions.create(model=model, input="add", tools=[_server(mcp, "add")]))
    assert done.status == "completed"
    tool_steps = [s for s in done.steps if s.type.startswith("mcp_server")]
    assert [s.type for s in tool_steps] == ["mcp_server_tool_call", "mcp_server_tool_result"]
    assert "5" in json.dumps(tool_steps[1].result)
    assert "5" in openai_fake.requests[-1].body.decode()


def test_mixed_function_and_mcp_calls_end_requires_action_after_the_mcp_ones(
    stack: Stack, mcp: RunningMcp, openai_fake: FakeServer
) -> None:
    openai_fake.scripts.clear()
    both = oa.openai_tool_call_script("docs__echo", fragments=('{"text": "x"}',), call_id="call_m")
    both_body = _two_calls(both.chunks or [])
    openai_fake.add(both_body, oa.openai_text_script("All done"))
    client = sdk(stack.url, new_key())
    weather = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}
    first: Any = interaction(
        client.interactions.create(model="gpt-4o", input="go", tools=[_server(mcp, "echo"), weather])
    )
    assert first.status == "requires_action"
    assert _types(first.steps) == ["mcp_server_tool_call", "function_call", "mcp_server_tool_result"]
    call_id = next(s.id for s in first.steps or [] if s.type == "function_call")
    second: Any = interaction(
        client.interactions.create(
            model="gpt-4o",
            previous_interaction_id=first.id,
            input=[{"type": "function_result", "call_id": call_id, "name": "get_weather", "result": "sunny"}],
            tools=[_server(mcp, "echo"), weather],
        )
    )
    assert second.status == "completed"
    history = openai_fake.requests[-1].json()["messages"]
    assert [m["role"] for m in history].count("tool") == 2


def _two_calls(chunks: list[bytes]) -> Any:
    """An OpenAI answer with two tool calls in one message: the MCP tool's and the client's function."""
    first = {
        "index": 0,
        "id": "call_m",
        "type": "function",
        "function": {"name": "docs__echo", "arguments": '{"text": "x"}'},
    }
    second = {
        "index": 1,
        "id": "call_f",
        "type": "function",
        "function": {"name": "get_weather", "arguments": "{}"},
    }
    body = [oa.chunk({"role": "assistant", "content": None, "tool_calls": [first, second]})]
    body.append(oa.chunk({}, finish="tool_calls"))
    body.append(oa.usage_chunk())
    return oa.script(body)


@pytest.mark.filterwarnings("ignore:Agents usage is experimental:UserWarning")
def test_cancel_stops_a_background_agent_loop_midway_and_keeps_its_steps(
    stack: Stack, mcp: RunningMcp, openai_fake: FakeServer
) -> None:
    """An agent's background run of ten model calls of `slow` (0.4 s each): cancelled after a few, the
    interaction keeps the steps made and no further call reaches the MCP server."""
    openai_fake.scripts.clear()
    openai_fake.add(
        *[
            oa.openai_tool_call_script("docs__slow", fragments=('{"seconds": 0.4}',), call_id=f"call_{n}")
            for n in range(10)
        ],
        oa.openai_text_script("done"),
    )
    client = sdk(stack.url, new_key())
    before = _slow_calls(mcp)
    # an agent on the fake OpenAI model, with the MCP server among its tools, run in the background
    agent = client.agents.create(base_agent="gpt-4o", tools=[_server(mcp, "slow")])  # type: ignore[arg-type]
    job: Any = interaction(client.interactions.create(agent=agent.id, input="slowly", background=True))
    until(lambda: _slow_calls(mcp) - before >= 3, timeout=20)
    cancelled = client.interactions.cancel(job.id or "")
    assert cancelled.status == "cancelled"
    made = _slow_calls(mcp) - before
    time.sleep(1.5)
    assert _slow_calls(mcp) - before == made
    kept: Any = client.interactions.get(job.id or "")
    assert 3 <= _types(kept.steps).count("mcp_server_tool_call") <= made
    assert len(openai_fake.scripts) > 0  # the loop did not run to its end


def _slow_calls(mcp: RunningMcp) -> int:
    return len([call for call in mcp.record.calls if call[0] == "slow"])


def test_headers_reach_only_the_mcp_server(stack: Stack, mcp: RunningMcp) -> None:
    logs = "".join(p.log() for p, _ in stack.servers) + "".join(p.log() for p in stack.workers)
    assert SECRET not in logs
    response = httpx.get(stack.url + "/readyz")
    assert response.status_code == 200


def test_a_worker_killed_mid_loop_repeats_no_tool_call(
    stacks: dict[str, Stack], mcp: RunningMcp, openai_fake: FakeServer
) -> None:
    """Its worker SIGKILLed after two slow calls: the run, which made output, is failed as worker_lost by
    the reaper with the steps it saved, and no call is made a second time (a re-run would repeat them)."""
    stack = stacks["tcp-workers"]
    openai_fake.scripts.clear()
    openai_fake.add(
        *[
            oa.openai_tool_call_script("docs__slow", fragments=('{"seconds": 0.4}',), call_id=f"call_{n}")
            for n in range(10)
        ],
        oa.openai_text_script("done"),
    )
    client = sdk(stack.url, new_key())
    before = _slow_calls(mcp)
    job: Any = interaction(
        client.interactions.create(
            model="gpt-4o", input="slowly", tools=[_server(mcp, "slow")], background=True
        )
    )
    until(lambda: _slow_calls(mcp) - before >= 2, timeout=20)
    [worker] = stack.workers
    worker.signal(9)
    worker.wait(10)
    stack.workers.clear()
    made = _slow_calls(mcp) - before
    stack.start_worker()
    ended: Any = until(lambda: _finished(client, job.id or ""), timeout=30)
    assert ended.status == "failed" and ended.errors[0].code == "worker_lost"
    # the call in flight at the kill may be missing: its step reaches the log within a flush (25 ms), while
    # its request may reach the MCP server first
    calls = _types(ended.steps).count("mcp_server_tool_call")
    assert made - 1 <= calls <= made
    time.sleep(1.0)
    assert _slow_calls(mcp) - before == made
