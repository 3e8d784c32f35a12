"""OpenAI's `response.*` webhook events (issue 26): an interaction's end told in OpenAI's payload to the
webhooks subscribed to them, signed as every static delivery, and verified by the openai SDK's own
`webhooks.unwrap` as an OpenAI receiver does; beside Google's events, each a delivery of its own."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

import httpx
import openai
import pytest
from google import genai
from openai.types.webhooks import (
    ResponseCancelledWebhookEvent,
    ResponseCompletedWebhookEvent,
    ResponseFailedWebhookEvent,
    ResponseIncompleteWebhookEvent,
)

from server.webhooks import events, rules
from tests.fakes.http import RecordedRequest
from tests.replies import interaction
from tests.support import TOPOLOGIES, Stack, new_key, running_stack, sdk
from tests.waiting import until_async

from .receivers import Receiver, verify_static

CONFIG: dict[str, dict[str, Any]] = {"webhooks": {"allow": ["127.0.0.0/8"], "issuer": "https://ix.test"}}
#: a model whose upstream is not there: its interactions fail
MODELS = '[[models]]\nmatch = "broken"\nbackend = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
RESPONSE_EVENTS = [
    events.RESPONSE_COMPLETED,
    events.RESPONSE_INCOMPLETE,
    events.RESPONSE_FAILED,
    events.RESPONSE_CANCELLED,
]
#: the openai SDK's type of the event each end is told as
OPENAI_TYPE: dict[str, type] = {
    "failed": ResponseFailedWebhookEvent,
    "incomplete": ResponseIncompleteWebhookEvent,
    "requires_action": ResponseCompletedWebhookEvent,
    "cancelled": ResponseCancelledWebhookEvent,
}
TOOL = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("response-events")
    with running_stack(workdir, config=CONFIG, models=MODELS, topology=TOPOLOGIES["tcp-embedded"]) as up:
        yield up


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with Receiver() as running:
        yield running


async def _webhook(client: genai.Client, uri: str, subscribed: list[str]) -> tuple[str, str]:
    created = await client.aio.webhooks.create(uri=uri, subscribed_events=cast(Any, subscribed))
    assert created.id and created.new_signing_secret
    return created.id, created.new_signing_secret


def unwrap(request: RecordedRequest, secret: str) -> object:
    """What a receiver written with the openai SDK does: raises unless a signature is `secret`'s, then
    parses the event into the SDK's own type."""
    receiving = openai.OpenAI(api_key="unused", webhook_secret=secret)
    return receiving.webhooks.unwrap(request.body, request.headers)


async def test_a_webhook_of_both_kinds_gets_both_payloads_of_one_end(
    stack: Stack, receiver: Receiver
) -> None:
    """One completed interaction: Google's event, verified by `standardwebhooks`, and OpenAI's, verified
    by the openai SDK, each its own delivery with its own webhook-id."""
    key = new_key()
    client = sdk(stack.url, key)
    webhook_id, secret = await _webhook(client, receiver.uri, [events.COMPLETED, events.RESPONSE_COMPLETED])
    before = int(time.time())
    done = interaction(await client.aio.interactions.create(model="echo", input="hi"))
    after = int(time.time()) + 1
    requests = await receiver.wait_for(2)
    by_type = {json.loads(r.body)["type"]: r for r in requests}
    assert set(by_type) == {events.COMPLETED, events.RESPONSE_COMPLETED}
    google = verify_static(by_type[events.COMPLETED], secret)
    assert google["data"] == {"id": done.id, "status": "completed"}
    answered = by_type[events.RESPONSE_COMPLETED]
    parsed = unwrap(answered, secret)
    assert isinstance(parsed, ResponseCompletedWebhookEvent)
    assert parsed.data.id == done.id and parsed.object == "event"
    assert parsed.id == answered.headers["webhook-id"] and parsed.id.startswith("evt_")
    assert before <= parsed.created_at <= after
    # one signature scheme: a receiver of Google's events verifies OpenAI's too
    assert verify_static(answered, secret)["data"] == {"id": done.id}
    # OpenAI's payload and nothing else: a pointer, as Google's is
    assert set(json.loads(answered.body)) == {"object", "id", "type", "created_at", "data"}
    assert len({r.headers["webhook-id"] for r in requests}) == 2
    await receiver.nothing_more(2, 0.5)
    async with httpx.AsyncClient(base_url=stack.url, headers={"x-goog-api-key": key}) as http:
        logged = (await http.get(f"/v1beta/webhooks/{webhook_id}/deliveries")).json()["deliveries"]
    assert sorted(each["event_type"] for each in logged) == [events.COMPLETED, events.RESPONSE_COMPLETED]
    assert {each["event_id"] for each in logged} == {r.headers["webhook-id"] for r in requests}


async def _status_is(client: genai.Client, interaction_id: str, status: str) -> bool:
    return (await client.aio.interactions.get(interaction_id)).status == status


async def _ends(client: genai.Client) -> dict[str, str]:
    """An interaction of each end: its id -> the status it ended with."""
    aio = client.aio.interactions
    failed = interaction(await aio.create(model="broken", input="x", background=True))
    limit = {"max_output_tokens": 3}
    short = interaction(await aio.create(model="echo", input="a b c d e f", generation_config=limit))
    call = interaction(await aio.create(model="echo", input="Paris", tools=cast(Any, [TOOL])))
    slow = interaction(await aio.create(model="echo-slow", input="word " * 200, background=True))
    await until_async(lambda: _status_is(client, slow.id or "", "in_progress"))
    await aio.cancel(slow.id or "")
    assert short.status == "incomplete" and call.status == "requires_action"
    return {
        failed.id or "": "failed",
        short.id or "": "incomplete",
        call.id or "": "requires_action",
        slow.id or "": "cancelled",
    }


async def test_every_end_is_its_own_response_event(stack: Stack, receiver: Receiver) -> None:
    """Failed, incomplete (OpenAI's own event, not `completed`), cancelled; and a function call, which is
    a completed response in OpenAI's dialect. A webhook of `response.*` only hears no `interaction.*`."""
    client = sdk(stack.url, new_key())
    _, secret = await _webhook(client, receiver.uri, RESPONSE_EVENTS)
    ended = await _ends(client)
    await receiver.wait_for(len(ended), within=20)
    await receiver.nothing_more(len(ended), 0.5)
    heard: dict[str, type] = {}
    for request in receiver.requests:
        parsed = unwrap(request, secret)
        heard[cast(Any, parsed).data.id] = type(parsed)
    assert heard == {interaction_id: OPENAI_TYPE[status] for interaction_id, status in ended.items()}


async def test_webhook_config_uris_hear_googles_events_only(stack: Stack, receiver: Receiver) -> None:
    """`webhook_config.uris` replace the registered webhooks, with Google's events (they subscribe to
    nothing): a webhook of `response.*` hears nothing of that interaction, the URIs no `response.*`."""
    client = sdk(stack.url, new_key())
    async with Receiver() as registered:
        await _webhook(client, registered.uri, RESPONSE_EVENTS)
        config = {"uris": [receiver.uri]}
        own = interaction(
            await client.aio.interactions.create(model="echo", input="a", webhook_config=config)
        )
        plain = interaction(await client.aio.interactions.create(model="echo", input="b"))
        [told] = await receiver.wait_for(1)
        [heard] = await registered.wait_for(1)
        await receiver.nothing_more(1, 0.5)
        await registered.nothing_more(1, 0.0)
    assert json.loads(told.body)["type"] == events.COMPLETED
    assert json.loads(told.body)["data"]["id"] == own.id
    assert json.loads(heard.body) == {
        "object": "event",
        "id": heard.headers["webhook-id"],
        "type": events.RESPONSE_COMPLETED,
        "created_at": json.loads(heard.body)["created_at"],
        "data": {"id": plain.id},
    }


def test_the_subscribable_events_are_those_fired() -> None:
    """What rules.py accepts is what events.py sends, and an end's two events have two ids, stable."""
    assert set(rules.EVENTS) == events.SUBSCRIBABLE
    assert set(rules.RESPONSE_EVENTS) == set(events.RESPONSE_BY_STATUS.values())
    made = events.response_event("t", "v1_x", "incomplete", 1_767_225_600_123)
    assert made == events.response_event("t", "v1_x", "incomplete", 1_767_225_600_123)
    assert made.id != events.event_id("t", "v1_x", "incomplete")
    assert made.id != events.response_event("u", "v1_x", "incomplete", 1_767_225_600_123).id
    assert json.loads(made.body) == {
        "object": "event",
        "id": made.id,
        "type": "response.incomplete",
        "created_at": 1_767_225_600,
        "data": {"id": "v1_x"},
    }


async def test_a_stored_chat_completion_is_told_as_an_interaction_and_no_response(
    stack: Stack, receiver: Receiver
) -> None:
    """A stored chat completion is an interaction (Google's event) but no response: OpenAI tells no
    webhook of its chat completions, so `response.completed` is not sent for it; a response after it is."""
    key = new_key()
    client = sdk(stack.url, key)
    await _webhook(client, receiver.uri, [events.COMPLETED, events.RESPONSE_COMPLETED])
    with openai.OpenAI(base_url=f"{stack.url}/v1", api_key=key, max_retries=0) as oai:
        chat = oai.chat.completions.create(
            model="echo", messages=[{"role": "user", "content": "kept"}], store=True
        )
        response = oai.responses.create(model="echo", input="a response")
    requests = await receiver.wait_for(3)
    await receiver.nothing_more(3, 0.5)
    told = sorted((json.loads(r.body)["type"], json.loads(r.body)["data"]["id"]) for r in requests)
    assert told == sorted(
        [
            (events.COMPLETED, chat.id),
            (events.COMPLETED, response.id),
            (events.RESPONSE_COMPLETED, response.id),
        ]
    )
