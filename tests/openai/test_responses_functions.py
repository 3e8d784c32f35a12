"""Function calls through the Responses API: the built-in echo model calls the first function tool it is
given (its arguments derived from the input) and, given the call's output, answers with the input and the
result. Chained by previous_response_id, and stateless (store=false, the whole conversation sent back)."""

from __future__ import annotations

import json
from typing import Any

import httpx
from openai import OpenAI
from openai.types.responses import ResponseFunctionToolCall

from .checks import create

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "strict": True,
}


def only_call(output: list[Any]) -> ResponseFunctionToolCall:
    calls = [item for item in output if isinstance(item, ResponseFunctionToolCall)]
    assert len(calls) == 1, output
    return calls[0]


def test_a_function_call_round_trip_by_previous_response_id(oai: OpenAI, base_url: str, api_key: str) -> None:
    first = create(oai, model="echo", input="Paris", tools=[WEATHER], tool_choice="auto")
    # Google's requires_action is a completed Response whose output is the call to answer
    assert first.status == "completed"
    call = only_call(first.output)
    assert call.name == "get_weather" and call.status == "completed"
    assert call.id == f"fc_{first.id}_0"
    assert isinstance(json.loads(call.arguments), dict)
    assert first.tools[0].type == "function" and first.tool_choice == "auto"
    google = httpx.get(
        f"{base_url}/v1beta/interactions/{first.id}", headers={"x-goog-api-key": api_key}
    ).json()
    assert google["status"] == "requires_action"
    second = create(
        oai,
        model="echo",
        previous_response_id=first.id,
        tools=[WEATHER],
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 21 C"}],
    )
    assert second.status == "completed"
    assert second.previous_response_id == first.id
    assert second.output_text == "Paris [get_weather: sunny, 21 C]"
    listed = oai.responses.input_items.list(second.id).data
    assert [(item.type, item.id) for item in listed] == [("function_call_output", f"fco_{second.id}_in0")]


def test_a_stateless_round_trip_sends_the_items_back(oai: OpenAI) -> None:
    """store=false: nothing is kept, the client replays the output items (a reasoning item with its
    encrypted content, the call) and the call's output."""
    first = create(oai, model="echo", input="Rome", tools=[WEATHER], store=False)
    call = only_call(first.output)
    replayed: list[Any] = [
        {"role": "user", "content": "Rome"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "c2lnbmF0dXJl"},
        call.model_dump(exclude_none=True),
        {
            "type": "function_call_output",
            "call_id": call.call_id,
            "output": [{"type": "input_text", "text": "rain"}],
        },
    ]
    second = create(oai, model="echo", input=replayed, tools=[WEATHER], store=False)
    assert second.output_text == "Rome [get_weather: rain]"
    assert second.id == ""


def test_tool_choice_forms_are_echoed(oai: OpenAI) -> None:
    named = create(
        oai,
        model="echo",
        input="Oslo",
        tools=[WEATHER],
        tool_choice={"type": "function", "name": "get_weather"},
    )
    assert named.tool_choice.model_dump(exclude_none=True) == {"type": "function", "name": "get_weather"}  # type: ignore[union-attr]
    required = create(oai, model="echo", input="Oslo", tools=[WEATHER], tool_choice="required")
    assert required.tool_choice == "required"
