"""The OpenAI Agents SDK (`openai-agents`) against us: an agent with a function tool over two turns, on its
default model, the Responses API, with our server as its client's base URL. `Runner.run` (not streamed):
the Responses stream is served by api/openai/response_streams.py, tested in test_response_streams*.py."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest
from agents import (
    Agent,
    Runner,
    function_tool,
    set_default_openai_api,
    set_default_openai_client,
    set_tracing_disabled,
)
from agents.items import ToolCallOutputItem
from openai import AsyncOpenAI

from .checks import valid
from .conftest import openai_base

CALLS: list[str] = []


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    CALLS.append(city)
    return f"sunny in {city}"


BODIES: list[bytes] = []


async def keep_body(response: httpx2.Response) -> None:
    """Every create's reply body, for the Open Responses check."""
    if response.request.method == "POST" and response.request.url.path.endswith("/responses"):
        BODIES.append(await response.aread())


@pytest.fixture
def agents_client(base_url: str, api_key: str) -> Iterator[AsyncOpenAI]:
    http = httpx2.AsyncClient(event_hooks={"response": [keep_body]})
    client = AsyncOpenAI(base_url=openai_base(base_url), api_key=api_key, max_retries=0, http_client=http)
    BODIES.clear()
    set_default_openai_client(client, use_for_tracing=False)
    set_default_openai_api("responses")
    set_tracing_disabled(True)
    CALLS.clear()
    yield client


async def test_an_agent_with_a_function_tool_over_two_turns(agents_client: AsyncOpenAI) -> None:
    agent = Agent(name="Weather", instructions="Answer about the weather.", model="echo", tools=[get_weather])
    first = await Runner.run(agent, "Paris")
    # echo called the tool, the SDK ran it and sent its output back: echo answers with both
    assert CALLS == ["Paris"]
    assert [type(item) for item in first.new_items if isinstance(item, ToolCallOutputItem)] == [
        ToolCallOutputItem
    ]
    assert first.final_output == "Paris [get_weather: sunny in Paris]"
    # the second turn: the whole conversation so far, and the next question
    second = await Runner.run(agent, [*first.to_input_list(), {"role": "user", "content": "And Rome?"}])
    assert CALLS == ["Paris", "And Rome?"]
    assert second.final_output == "And Rome? [get_weather: sunny in And Rome?]"
    # both runs' responses are stored, each the last of its run
    last = second.raw_responses[-1].response_id
    assert last is not None
    stored = await agents_client.responses.retrieve(last)
    assert stored.output_text == second.final_output
    # two model calls a run: the call, then the answer
    assert len(BODIES) == 4
    for body in BODIES:
        valid(body)
