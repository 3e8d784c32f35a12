"""The foundation, driven by the official SDK: create, get, chains, delete, stateless replay, functions."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
import redis.asyncio as aioredis
from google import genai
from google.genai._interactions import BadRequestError, NotFoundError
from google.genai.interactions import FunctionCallStep, FunctionResultStep

from server.store.commands import typed

from .replies import id_of, interaction, steps_of, text_of_step, usage_of
from .support import Stack, sdk, tenant_keys

EVERY_TOPOLOGY = True

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def words(text: str) -> int:
    return len(text.split())


def test_create_returns_this_turns_output(client: genai.Client) -> None:
    reply = interaction(
        client.interactions.create(model="echo", input="Hello there", system_instruction="Be terse.")
    )
    assert reply.status == "completed"
    assert reply.id and reply.id.startswith("v1_")
    assert reply.output_text == "Hello there"
    assert [s.type for s in steps_of(reply)] == ["model_output"]
    assert usage_of(reply).total_input_tokens == 2
    assert usage_of(reply).total_output_tokens == 2
    assert reply.created and reply.updated and reply.created.endswith("Z")
    # the config is echoed
    assert reply.model == "echo"
    assert reply.system_instruction == "Be terse."


def test_get_returns_the_full_timeline(client: genai.Client) -> None:
    reply = interaction(client.interactions.create(model="echo", input="What is up"))
    got = client.interactions.get(id_of(reply))
    assert got.id == reply.id
    assert got.status == "completed"
    assert [s.type for s in steps_of(got)] == ["user_input", "model_output"]
    assert text_of_step(steps_of(got)[0]) == "What is up"
    assert got.input is None
    with_input = client.interactions.get(id_of(reply), include_input=True)
    assert with_input.input == "What is up"


def test_three_turn_chain_hands_the_whole_history_to_the_model(client: genai.Client) -> None:
    first = interaction(client.interactions.create(model="echo", input="one two"))
    second = interaction(
        client.interactions.create(model="echo", input="three", previous_interaction_id=id_of(first))
    )
    third = interaction(
        client.interactions.create(model="echo", input="four five six", previous_interaction_id=id_of(second))
    )
    # echo counts the words of everything it was given: the whole chain in order, then this turn
    assert usage_of(first).total_input_tokens == 2
    assert usage_of(second).total_input_tokens == 2 + 2 + 1
    assert usage_of(third).total_input_tokens == 2 + 2 + 1 + 1 + 3
    assert third.output_text == "four five six"
    got = client.interactions.get(id_of(third))
    assert got.previous_interaction_id == second.id
    assert [s.type for s in steps_of(got)] == ["user_input", "model_output"]


def test_delete_then_get_and_continue_are_404(client: genai.Client) -> None:
    reply_id = id_of(interaction(client.interactions.create(model="echo", input="to be deleted")))
    assert client.interactions.delete(reply_id) is None
    with pytest.raises(NotFoundError):
        client.interactions.get(reply_id)
    with pytest.raises(NotFoundError) as caught:
        client.interactions.create(model="echo", input="next", previous_interaction_id=reply_id)
    assert reply_id in str(caught.value)


def test_unknown_previous_interaction_is_404(client: genai.Client) -> None:
    with pytest.raises(NotFoundError) as caught:
        client.interactions.create(model="echo", input="x", previous_interaction_id="v1_doesnotexist")
    assert "v1_doesnotexist" in str(caught.value)


def test_continuing_from_an_unfinished_interaction_is_400(beta: genai.Client) -> None:
    running = id_of(
        interaction(
            beta.interactions.create(model="echo-slow", input=" ".join(["word"] * 60), background=True)
        )
    )
    try:
        with pytest.raises(BadRequestError) as caught:
            beta.interactions.create(model="echo", input="x", previous_interaction_id=running)
        assert "previous_interaction_id" in str(caught.value) or running in str(caught.value)
    finally:
        beta.interactions.cancel(running)


def test_stateless_replay_of_steps(client: genai.Client) -> None:
    steps = [
        {"type": "user_input", "content": [{"type": "text", "text": "What is 2+2?"}]},
        {"type": "thought", "signature": "c2lnLWE=", "summary": [{"type": "text", "text": "adding"}]},
        {"type": "model_output", "content": [{"type": "text", "text": "4"}]},
        {"type": "user_input", "content": [{"type": "text", "text": "Times 3?"}]},
    ]
    reply = interaction(client.interactions.create(model="echo", input=steps, store=False))
    assert reply.status == "completed"
    assert not reply.id
    assert reply.output_text == "Times 3?"
    # every word of the replayed history reached the model
    assert usage_of(reply).total_input_tokens == 3 + 1 + 1 + 2


def test_function_calling_round_trip(client: genai.Client) -> None:
    call = interaction(client.interactions.create(model="echo", input="Paris", tools=[WEATHER_TOOL]))
    assert call.status == "requires_action"
    (step,) = steps_of(call)
    assert isinstance(step, FunctionCallStep)  # type "function_call"
    assert step.name == "get_weather"
    assert step.arguments == {"city": "Paris"}
    # the SDK may send a function_result without `name`: the server fills it in from the call
    answer = interaction(
        client.interactions.create(
            model="echo",
            previous_interaction_id=call.id,
            tools=[WEATHER_TOOL],
            input=[{"type": "function_result", "call_id": step.id, "result": "sunny"}],
        )
    )
    assert answer.status == "completed"
    assert answer.output_text == "Paris [get_weather: sunny]"
    got = client.interactions.get(id_of(answer))
    result_step = steps_of(got)[0]
    assert isinstance(result_step, FunctionResultStep)  # type "function_result"
    assert result_step.name == "get_weather"


def test_unknown_types_and_thought_signatures_round_trip(http: httpx.Client) -> None:
    steps = [
        {"type": "user_input", "content": [{"type": "text", "text": "hi"}, {"type": "hologram", "beam": 3}]},
        {"type": "brand_new_step", "payload": {"a": [1, None, "x"]}},
        {"type": "thought", "signature": "c2lnLWI=", "summary": [{"type": "text", "text": "hmm"}]},
        {"type": "user_input", "content": [{"type": "text", "text": "again"}]},
    ]
    created = http.post("/v1beta/interactions", json={"model": "echo", "input": steps})
    assert created.status_code == 200, created.text
    got = http.get(f"/v1beta/interactions/{created.json()['id']}", params={"stream": "false"}).json()
    assert got["steps"][:4] == steps
    assert got["steps"][4]["type"] == "model_output"


def test_all_version_segments_and_vertex_paths(http: httpx.Client) -> None:
    for prefix in ("/v1", "/v1beta", "/v1alpha", "/v1beta1", "/v1beta1/projects/p1/locations/us-central1"):
        created = http.post(f"{prefix}/interactions", json={"model": "echo", "input": "hi"})
        assert created.status_code == 200, (prefix, created.text)
        assert created.headers["content-type"].startswith("application/json")
        got = http.get(f"{prefix}/interactions/{created.json()['id']}", params={"stream": "false"})
        assert got.status_code == 200


def test_cancel_of_a_finished_interaction_is_400(client: genai.Client) -> None:
    reply = interaction(client.interactions.create(model="echo", input="done already"))
    with pytest.raises(BadRequestError) as caught:
        client.interactions.cancel(id_of(reply))
    assert "completed" in str(caught.value)


def test_max_output_tokens_makes_it_incomplete(client: genai.Client) -> None:
    reply = interaction(
        client.interactions.create(
            model="echo", input="a b c d e f", generation_config={"max_output_tokens": 3}
        )
    )
    assert reply.status == "incomplete"
    assert reply.output_text == "a b c"


async def test_chain_is_rebuilt_in_a_constant_number_of_round_trips(
    stack: Stack, base_url: str, api_key: str, tenant: str, redis: aioredis.Redis
) -> None:
    client = sdk(base_url, api_key)
    first = id_of(interaction(await client.aio.interactions.create(model="echo", input="turn 0")))
    previous = first
    for i in range(1, 40):
        previous = id_of(
            interaction(
                await client.aio.interactions.create(
                    model="echo", input=f"turn {i}", previous_interaction_id=previous
                )
            )
        )

    async def commands_for_one_turn(parent: str) -> tuple[int, int]:
        # a delete makes every process drop the tenant's cached histories: the chain is read from Redis
        throwaway = interaction(await client.aio.interactions.create(model="echo", input="x"))
        await client.aio.interactions.delete(id_of(throwaway))
        seen: list[str] = []
        async with redis.monitor() as monitor:
            reader = asyncio.create_task(_collect(monitor, tenant, seen))
            await asyncio.sleep(0.05)
            turn = interaction(
                await client.aio.interactions.create(model="echo", input="x", previous_interaction_id=parent)
            )
            await asyncio.sleep(0.2)
            reader.cancel()
        tokens = usage_of(turn).total_input_tokens
        assert tokens is not None
        return len(seen), tokens

    at_depth_1, words_1 = await commands_for_one_turn(first)
    at_depth_40, words_40 = await commands_for_one_turn(previous)
    assert at_depth_40 == at_depth_1 <= 3
    # and the whole chain did reach the model: 2 words in, 2 out per turn, then "x"
    assert words_1 == 4 + 1
    assert words_40 == 40 * 4 + 1


async def _collect(monitor: aioredis.client.Monitor, tenant: str, seen: list[str]) -> None:
    async for command in monitor.listen():
        text = command.get("command", "")
        # commands run inside a Lua script are reported from the "lua" client; they are not round trips
        if (
            tenant in text
            and command.get("client_type") != "lua"
            and "lua" not in str(command.get("client_address"))
        ):
            seen.append(text)


async def test_nothing_is_stored_for_store_false(
    base_url: str, api_key: str, tenant: str, redis: aioredis.Redis
) -> None:
    client = sdk(base_url, api_key)
    await client.aio.interactions.create(model="echo", input="stateless", store=False)
    assert await tenant_keys(redis, tenant) == []
    # but what it used, in the tenant's usage of the day (store/usage.py) and its tokens of the minute
    kept = sorted(await tenant_keys(redis, tenant, usage=True))
    assert [key.rsplit(b":", 2)[-2 if b"usage" in key else -1] for key in kept] == [b"tpm", b"usage"]
    day = next(key for key in kept if b"usage" in key)
    assert await typed(redis).hget(day.decode(), "all|s:completed") == b"1"


def test_background_create_returns_at_once(beta: genai.Client) -> None:
    started = time.monotonic()
    reply = interaction(
        beta.interactions.create(model="echo-slow", input=" ".join(["w"] * 40), background=True)
    )
    assert time.monotonic() - started < 1.0
    assert reply.status == "in_progress"
    assert not reply.steps
    beta.interactions.cancel(id_of(reply))


def test_every_model_output_and_user_input_step_carries_content(http: httpx.Client) -> None:
    """sttp-ai decodes strictly: `content` must be there even when it is empty."""
    body = {"model": "echo", "input": "a b c", "generation_config": {"max_output_tokens": 0}}
    created = http.post("/v1beta/interactions", json=body).json()
    assert created["status"] == "incomplete"
    assert created["steps"] == [{"type": "model_output", "content": []}]
    got = http.get(f"/v1beta/interactions/{created['id']}", params={"stream": "false"}).json()
    assert all("content" in step for step in got["steps"])
