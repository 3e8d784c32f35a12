"""`interactions.create(agent=<id>)` runs a stored agent (issue 15): its base model, system instruction and
tools, foreground, streamed and in the background, and in continued chains; configured names still work."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from google import genai
from google.genai.interactions import FunctionCallStep

from ..replies import all_events, id_of, interaction, steps_of, streamed_text
from ..support import Stack, new_key, sdk
from ..waiting import until
from .test_resource import WEATHER

pytestmark = pytest.mark.filterwarnings("ignore:Agents usage is experimental:UserWarning")

CLOCK = {
    "type": "function",
    "name": "get_time",
    "description": "The time in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def make_agent(client: genai.Client, **fields: Any) -> str:
    made = client.agents.create(base_agent=fields.pop("base_agent", "echo"), **fields)
    assert made.id
    return made.id


def test_an_agent_runs_on_its_base_model_with_its_instruction(client: genai.Client) -> None:
    agent = make_agent(client, system_instruction="You are terse.")
    reply = interaction(client.interactions.create(agent=agent, input="Hello there"))
    assert reply.status == "completed"
    assert reply.output_text == "Hello there"
    # the agent as sent; the model it ran on; its instruction
    assert (reply.agent, reply.model, reply.system_instruction) == (agent, "echo", "You are terse.")
    got = client.interactions.get(id_of(reply))
    assert (got.agent, got.model, got.system_instruction) == (agent, "echo", "You are terse.")
    # the request's own instruction is appended to the agent's
    more = interaction(client.interactions.create(agent=agent, input="hi", system_instruction="In French."))
    assert more.system_instruction == "You are terse.\n\nIn French."


def test_an_agents_function_tool_is_called(client: genai.Client) -> None:
    agent = make_agent(client, id="weather-desk", tools=[WEATHER])
    call = interaction(client.interactions.create(agent=agent, input="Paris"))
    assert call.status == "requires_action"
    (step,) = steps_of(call)
    assert isinstance(step, FunctionCallStep) and step.name == "get_weather"
    # the request's tools come after the agent's (echo calls the first one)
    both = interaction(client.interactions.create(agent=agent, input="Rome", tools=[CLOCK]))
    assert [tool.model_dump()["name"] for tool in both.tools or []] == ["get_weather", "get_time"]
    (first,) = steps_of(both)
    assert isinstance(first, FunctionCallStep) and first.name == "get_weather"
    # the chain continues, naming the agent again: resolved again
    answer = interaction(
        client.interactions.create(
            agent=agent,
            previous_interaction_id=call.id,
            input=[{"type": "function_result", "call_id": step.id, "name": "get_weather", "result": "sunny"}],
        )
    )
    assert answer.status == "completed"
    assert answer.output_text == "Paris [get_weather: sunny]"
    assert answer.agent == agent


def test_a_background_agent_run(client: genai.Client) -> None:
    agent = make_agent(client, base_agent="echo-slow", system_instruction="Think slowly.")
    queued = interaction(client.interactions.create(agent=agent, input="one two three", background=True))
    assert queued.status == "in_progress"
    assert (queued.agent, queued.model) == (agent, "echo-slow")

    def finished() -> Any:
        got = client.interactions.get(id_of(queued))
        return got if got.status == "completed" else None

    done = until(finished, timeout=30)
    assert done.output_text == "one two three"
    assert (done.agent, done.model, done.system_instruction) == (agent, "echo-slow", "Think slowly.")
    # a continued turn, in the background too
    follow = interaction(
        client.interactions.create(
            agent=agent, input="four", previous_interaction_id=queued.id, background=True
        )
    )
    until(lambda: client.interactions.get(id_of(follow)).status == "completed" or None, timeout=30)


def test_a_streamed_agent_run(client: genai.Client) -> None:
    agent = make_agent(client)
    events = all_events(client.interactions.create(agent=agent, input="stream me", stream=True))
    assert streamed_text(events) == "stream me"


def test_configured_names_still_work(client: genai.Client, http: httpx.Client) -> None:
    reply = interaction(client.interactions.create(agent="house-agent", input="from the config"))
    assert reply.output_text == "from the config"
    assert reply.agent == "house-agent" and reply.model is None
    # a name that is neither a stored agent nor configured: the 400 it always was
    error = http.post("/v1beta/interactions", json={"agent": "nobody-here", "input": "x"}).json()["error"]
    assert error["code"] == 400 and "`agent`" in error["message"]
    # a deleted agent is no longer found
    agent = make_agent(client)
    client.agents.delete(agent)
    error = http.post("/v1beta/interactions", json={"agent": agent, "input": "x"}).json()["error"]
    assert error["code"] == 400 and "`agent`" in error["message"]


def test_another_tenants_agent_is_not_run(stack: Stack, client: genai.Client, http: httpx.Client) -> None:
    agent = make_agent(sdk(stack.url, new_key()), id="their-agent")
    error = http.post("/v1beta/interactions", json={"agent": agent, "input": "x"}).json()["error"]
    assert error["code"] == 400 and "their-agent" in error["message"]
    assert not client.agents.list().agents
