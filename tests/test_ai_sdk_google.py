"""What the Vercel AI SDK's `@ai-sdk/google` 4.x, written against Google's hosted Interactions API, sends and
reads (issue 25, point 6), against the fake upstreams of test_upstreams_api and the app in this process.

Its tool loop sends the whole conversation each turn (no `previous_interaction_id` unless the caller sets
one), every tool result as a `function_result` item of a `user_input` step's `content`
(`convert-to-google-interactions-input.ts`): the bodies below are built the way that module builds them
from our replies. Its replies are read against a closed list of statuses (`google-interactions-api.ts`,
`interactionStatusSchema`): one it does not know fails the call, the poll of a background run, its resume.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from google import genai

from server.protocol.content import FunctionResultContent, TextContent
from server.protocol.steps import FunctionCallStep, FunctionResultStep, Step, UserInputStep
from server.runner.history import model_steps
from tests.fakes import gemini as gm
from tests.fakes.http import FakeServer

from . import test_upstreams_api as e2e
from .inproc import ThreadedApp
from .replies import interaction
from .sse import events as sse_events
from .test_upstreams_api import BACKENDS, MODEL, WEATHER_TOOL, Upstreams, call_script, text_script
from .waiting import until

# this module's instances of the fakes and the in-process app, and the per-test reset and clients
upstreams = e2e.upstreams
e2e_app = e2e.e2e_app
fresh = e2e.fresh
ai = e2e.ai
api = e2e.api

PATH = "/v1beta/interactions"
#: the statuses `@ai-sdk/google` 4.x parses (`interactionStatusSchema`); any other fails its call
AI_SDK_STATUSES = {"in_progress", "requires_action", "completed", "failed", "cancelled", "incomplete"}
#: a tool's value, as the SDK sends a `json` tool output: JSON.stringify'd into `result`
WEATHER = {"temp_c": 21, "sky": "sunny"}
WEATHER_TEXT = json.dumps(WEATHER, separators=(",", ":"))
#: the call id each backend's scripted call carries (Gemini sends none: ours, read from the reply)
CALL_ID = {"openai": "call_abc123", "anthropic": "toolu_01abc"}


@pytest.fixture(scope="module")
def url(e2e_app: ThreadedApp) -> str:
    return e2e_app.url


# ---------------------------------------------------------------------------------------------------------
# The bodies, as @ai-sdk/google builds them


def user_text(text: str) -> dict[str, Any]:
    return {"type": "user_input", "content": [{"type": "text", "text": text}]}


def assistant_steps(reply: dict[str, Any]) -> list[dict[str, Any]]:
    """A reply's steps as the SDK sends them back: its output read into reasoning, text and tool-call parts
    (`parse-google-interactions-outputs.ts`), then each part as the converter writes it."""
    steps: list[dict[str, Any]] = []
    for step in reply["steps"]:
        if step["type"] == "thought":
            text = "".join(item.get("text", "") for item in step.get("summary") or [])
            thought: dict[str, Any] = {"type": "thought"}
            if step.get("signature"):
                thought["signature"] = step["signature"]
            if text:
                thought["summary"] = [{"type": "text", "text": text}]
            steps.append(thought)
        elif step["type"] == "model_output":
            text = "".join(item.get("text", "") for item in step["content"])
            if steps and steps[-1]["type"] == "model_output":
                steps[-1]["content"][0]["text"] += text
            else:
                steps.append({"type": "model_output", "content": [{"type": "text", "text": text}]})
        elif step["type"] == "function_call":
            steps.append(
                {
                    "type": "function_call",
                    "id": step["id"],
                    "name": step["name"],
                    "arguments": step["arguments"],
                }
            )
    return steps


def tool_results(*results: tuple[str, str, str]) -> dict[str, Any]:
    """A tool message: one `function_result` item per (call id, tool name, result), in a `user_input`."""
    content = [{"type": "function_result", "call_id": c, "name": n, "result": r} for c, n, r in results]
    return {"type": "user_input", "content": content}


def post(api: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    reply = api.post(PATH, json=body)
    assert reply.status_code == 200, reply.text
    got: dict[str, Any] = reply.json()
    assert got["status"] in AI_SDK_STATUSES, got
    return got


def call_of(reply: dict[str, Any]) -> dict[str, Any]:
    calls: list[dict[str, Any]] = [step for step in reply["steps"] if step["type"] == "function_call"]
    assert len(calls) == 1, reply["steps"]
    return calls[0]


# ---------------------------------------------------------------------------------------------------------
# What each backend is sent for a tool result


def sent_result(backend: str, body: dict[str, Any], call_id: str) -> Any:
    """The function result `body` (the upstream's request) carries, in the provider's own form."""
    if backend == "gemini":
        parts = [part for content in body["contents"] for part in content["parts"]]
        return [part["functionResponse"] for part in parts if "functionResponse" in part]
    if backend == "openai":
        return [m for m in body["messages"] if m["role"] == "tool" and m["tool_call_id"] == call_id]
    blocks = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
    return [b for b in blocks if b["type"] == "tool_result" and b["tool_use_id"] == call_id]


def expected_result(backend: str, call_id: str) -> Any:
    if backend == "gemini":
        return [{"name": "get_weather", "response": {"result": WEATHER_TEXT}}]
    if backend == "openai":
        return [{"role": "tool", "tool_call_id": call_id, "content": WEATHER_TEXT}]
    return [{"type": "tool_result", "tool_use_id": call_id, "content": WEATHER_TEXT}]


def no_stand_in(fake: FakeServer) -> None:
    """No request carried the stand-in of a call left unanswered."""
    assert all(b"No result was provided" not in request.body for request in fake.requests)


@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_tool_loop_as_the_ai_sdk_runs_it_ends_with_the_answer(
    backend: str, background: bool, api: httpx.Client, upstreams: Upstreams
) -> None:
    """The model calls the tool, gets its result (an item of a `user_input`, in the whole history the SDK
    resends), answers; a chain continued from that answer still shows the model the result."""
    fake = upstreams[backend]
    fake.add(call_script(backend), text_script(backend, "It is sunny in Paris."))
    fake.add(text_script(backend, "Tomorrow too."))
    model = MODEL[backend]
    question = user_text("Weather in Paris?")
    first = post(api, {"model": model, "input": [question], "tools": [WEATHER_TOOL]})
    assert first["status"] == "requires_action"
    call_id = call_of(first)["id"]
    assert call_id == CALL_ID.get(backend, call_id)

    sent = [question, *assistant_steps(first), tool_results((call_id, "get_weather", WEATHER_TEXT))]
    body: dict[str, Any] = {"model": model, "input": sent, "tools": [WEATHER_TOOL]}
    if background:
        body["background"] = True
    second = post(api, body)
    if background:
        assert second["status"] == "in_progress"
        second = until(lambda: finished(api, second["id"]), timeout=15)
    assert second["status"] == "completed", second
    assert second["steps"][-1]["content"] == [{"type": "text", "text": "It is sunny in Paris."}]
    assert sent_result(backend, fake.requests[1].json(), call_id) == expected_result(backend, call_id)

    # stored as it was sent: get's timeline starts with this turn's input, item for item
    got = api.get(f"{PATH}/{second['id']}").json()
    assert got["steps"][: len(sent)] == sent
    assert not got.get("warnings")

    third = post(
        api,
        {"model": model, "previous_interaction_id": second["id"], "input": [user_text("And tomorrow?")]},
    )
    assert third["status"] == "completed"
    assert sent_result(backend, fake.requests[2].json(), call_id) == expected_result(backend, call_id)
    assert len(fake.requests) == 3
    no_stand_in(fake)


def finished(api: httpx.Client, interaction_id: str) -> dict[str, Any] | None:
    got: dict[str, Any] = api.get(f"{PATH}/{interaction_id}").json()
    assert got["status"] in AI_SDK_STATUSES, got
    return got if got["status"] != "in_progress" else None


def test_results_for_parallel_calls_reach_gemini_in_the_order_of_the_calls(
    api: httpx.Client, upstreams: Upstreams
) -> None:
    fake = upstreams.gemini
    parts = [{"functionCall": {"name": "get_weather", "args": {"city": city}}} for city in ("Paris", "Rome")]
    fake.add(
        gm.script([gm.chunk(parts, finish="STOP", meta=gm.usage())]), gm.gemini_text_script("Both sunny.")
    )
    question = user_text("Weather in Paris and Rome?")
    first = post(api, {"model": MODEL["gemini"], "input": [question], "tools": [WEATHER_TOOL]})
    paris, rome = (step["id"] for step in first["steps"] if step["type"] == "function_call")
    # answered in the other order, in one tool message
    results = tool_results((rome, "get_weather", "warm"), (paris, "get_weather", "mild"))
    sent = [question, *assistant_steps(first), results]
    second = post(api, {"model": MODEL["gemini"], "input": sent, "tools": [WEATHER_TOOL]})
    assert second["status"] == "completed"
    assert sent_result("gemini", fake.requests[1].json(), "") == [
        {"name": "get_weather", "response": {"result": "mild"}},
        {"name": "get_weather", "response": {"result": "warm"}},
    ]
    no_stand_in(fake)


def test_the_official_sdk_can_send_a_result_inside_user_input_and_echo_answers_it(
    ai: genai.Client, api: httpx.Client
) -> None:
    """google-genai (its user_input content is open: an item it does not know is sent as it is), chained
    with `previous_interaction_id`, on the built-in echo model (no upstream)."""
    first = interaction(ai.interactions.create(model="echo", input="Paris", tools=[WEATHER_TOOL]))
    assert first.status == "requires_action"
    [call] = [step for step in first.steps or [] if step.type == "function_call"]
    content = [{"type": "function_result", "call_id": call.id, "result": "sunny", "is_error": False}]
    second = interaction(
        ai.interactions.create(
            model="echo",
            previous_interaction_id=first.id,
            input=[{"type": "user_input", "content": content}],
            tools=[WEATHER_TOOL],
        )
    )
    assert second.status == "completed"
    # echo answers with the last user text and the results after it (no `name` sent: the call's id)
    assert second.output_text == f"Paris [{call.id}: sunny]"
    raw = api.get(f"{PATH}/{second.id}").json()
    assert raw["steps"][0] == {"type": "user_input", "content": content}

    third = interaction(
        ai.interactions.create(
            model="echo", previous_interaction_id=second.id, input="again", tools=[WEATHER_TOOL]
        )
    )
    # a new user turn: echo calls the tool again, as it does for every fresh question
    assert third.status == "requires_action"


def test_echo_answers_a_tool_message_of_the_ai_sdk(api: httpx.Client) -> None:
    question = user_text("Paris")
    first = post(api, {"model": "echo", "input": [question], "tools": [WEATHER_TOOL]})
    call_id = call_of(first)["id"]
    sent = [question, *assistant_steps(first), tool_results((call_id, "get_weather", "sunny"))]
    second = post(api, {"model": "echo", "input": sent, "tools": [WEATHER_TOOL]})
    assert second["status"] == "completed"
    assert second["steps"][-1]["content"] == [{"type": "text", "text": "Paris [get_weather: sunny]"}]


def test_a_result_item_without_its_call_id_is_a_400_naming_it(api: httpx.Client) -> None:
    bad = {"type": "user_input", "content": [{"type": "function_result", "result": "sunny"}]}
    reply = api.post(PATH, json={"model": "echo", "input": [user_text("Paris"), bad]})
    assert reply.status_code == 400
    message = reply.json()["error"]["message"]
    assert "`input[1].content[0]`" in message and "`call_id`" in message


# ---------------------------------------------------------------------------------------------------------
# The history every backend reads (pure)


def test_model_steps_turns_result_items_into_result_steps_before_the_rest() -> None:
    question = UserInputStep(content=[TextContent(text="Weather?")])
    call = FunctionCallStep(id="c1", name="get_weather", arguments={})
    item = FunctionResultContent(call_id="c1", name="get_weather", result={"temp_c": 21}, is_error=True)
    mixed = UserInputStep(content=[TextContent(text="then"), item])
    shown = model_steps([question, call, mixed])
    expected: list[Step] = [
        question,
        call,
        FunctionResultStep(call_id="c1", name="get_weather", result={"temp_c": 21}, is_error=True),
        UserInputStep(content=[TextContent(text="then")]),
    ]
    assert shown == expected
    assert shown[0] is question and mixed.content[1] is item  # nothing stored is changed
    # converted once: the same again (a remembered history converts to itself)
    again = model_steps(shown)
    assert again is shown


def test_model_steps_leaves_a_history_without_result_items_as_it_is() -> None:
    history: list[Step] = [
        UserInputStep(content=[TextContent(text="Weather?")]),
        FunctionCallStep(id="c1", name="get_weather", arguments={}),
        FunctionResultStep(call_id="c1", result="sunny"),
    ]
    assert model_steps(history) is history


# ---------------------------------------------------------------------------------------------------------
# Background runs: statuses the SDK knows, on create, poll, stream and cancel


def sse_statuses(api: httpx.Client, interaction_id: str) -> list[str]:
    with api.stream("GET", f"{PATH}/{interaction_id}", params={"stream": "true"}) as reply:
        assert reply.status_code == 200
        found = list(sse_events(reply))
    statuses = []
    for data in found:
        status = data.get("status") or (data.get("interaction") or {}).get("status")
        if status is not None:
            statuses.append(status)
    return statuses


def test_a_background_run_shows_only_statuses_the_ai_sdk_knows(api: httpx.Client) -> None:
    body = {"model": "echo-slow", "input": [user_text("one two three")], "background": True}
    created = post(api, body)
    assert created["status"] == "in_progress"  # Google's answer; the store holds it queued
    statuses = sse_statuses(api, created["id"])
    assert set(statuses) <= AI_SDK_STATUSES, statuses
    assert statuses[0] == "in_progress" and statuses[-1] == "completed"
    done = finished(api, created["id"])
    assert done is not None and done["status"] == "completed"
    listed = api.get(PATH, params={"status": "completed"}).json()["interactions"]
    assert {item["status"] for item in listed} <= AI_SDK_STATUSES


def test_a_background_run_cancelled_as_the_ai_sdk_cancels_it(api: httpx.Client) -> None:
    body = {"model": "echo-slow", "input": [user_text(" ".join(["w"] * 200))], "background": True}
    created = post(api, body)
    assert created["status"] == "in_progress"
    polled = api.get(f"{PATH}/{created['id']}").json()
    assert polled["status"] == "in_progress"
    # cancelGoogleInteraction: POST .../cancel with an empty object
    cancelled = api.post(f"{PATH}/{created['id']}/cancel", content=b"{}", headers=JSON)
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"


JSON = {"Content-Type": "application/json"}
