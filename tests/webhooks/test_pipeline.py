"""Webhook events end to end: real servers and workers (as `make run` starts them, and with separate worker
processes), the official SDK as the client, and a receiver on loopback that verifies what it gets as real
receivers do (tests/webhooks/receivers.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

import httpx
import pytest
from google import genai
from redis import asyncio as aioredis

from server.webhooks.events import CANCELLED, COMPLETED, FAILED, PING
from tests.fakes.http import Script
from tests.replies import interaction
from tests.support import Stack, new_key, sdk, stacks_by_topology, tenant_of
from tests.waiting import until_async

from .receivers import Receiver, signatures, verify_dynamic, verify_static

#: retries within seconds, so that a test sees several; loopback receivers allowed
CONFIG: dict[str, dict[str, Any]] = {
    "webhooks": {
        "allow": ["127.0.0.0/8"],
        "backoff_initial_seconds": 0.3,
        "backoff_max_seconds": 1.0,
        "retry_for_seconds": 10.0,
        "attempt_timeout_seconds": 2.0,
        "disable_after_failed_events": 2,
    },
    # a deferred retry is found by a worker's read of the queue (15 waits of this)
    "worker": {"poll_delay_ms": 50},
}
#: the JWT issuer as an operator sets it: the web processes and the workers must agree on it
ISSUER = "https://interactions.test"
CONFIG["webhooks"]["issuer"] = ISSUER
#: a model whose upstream is not there: its interactions fail
MODELS = '[[models]]\nmatch = "broken"\nbackend = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
ALL_EVENTS = [COMPLETED, FAILED, CANCELLED, "interaction.requires_action"]


@pytest.fixture(scope="module")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Stack]]:
    """`make run` (its Redis on a unix socket, the worker in the web process), and a web process with a
    separate worker process on a TCP Redis (the one whose worker the tests kill)."""
    with stacks_by_topology(
        tmp_path_factory, "webhooks", ["make-run", "tcp-workers"], config=CONFIG, models=MODELS
    ) as started:
        yield started


@pytest.fixture(params=["make-run", "tcp-workers"])
def stack(request: pytest.FixtureRequest, stacks: dict[str, Stack]) -> Stack:
    return stacks[request.param]


@pytest.fixture
def workers_stack(stacks: dict[str, Stack]) -> Stack:
    return stacks["tcp-workers"]


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with Receiver() as running:
        yield running


async def _webhook(client: genai.Client, uri: str, events: list[str] | None = None) -> tuple[str, str]:
    created = await client.aio.webhooks.create(uri=uri, subscribed_events=cast(Any, events or ALL_EVENTS))
    assert created.id and created.new_signing_secret
    return created.id, created.new_signing_secret


async def _deliveries(stack: Stack, key: str, webhook_id: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=stack.url, headers={"x-goog-api-key": key}) as http:
        response = await http.get(f"/v1beta/webhooks/{webhook_id}/deliveries")
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["deliveries"]
    return found


async def test_a_webhook_hears_of_each_end_signed_with_its_secret(stack: Stack, receiver: Receiver) -> None:
    """Background and foreground interactions, one event each, verified with the `standardwebhooks`
    package; the payload is thin (id and status)."""
    client = sdk(stack.url, new_key())
    webhook_id, secret = await _webhook(client, receiver.uri)
    background = interaction(await client.aio.interactions.create(model="echo", input="one", background=True))
    foreground = interaction(await client.aio.interactions.create(model="echo", input="two"))
    requests = await receiver.wait_for(2)
    payloads = [verify_static(request, secret) for request in requests]
    assert {p["data"]["id"] for p in payloads} == {background.id, foreground.id}
    for payload in payloads:
        assert payload["type"] == COMPLETED and payload["version"] == "v1"
        assert payload["data"]["status"] == "completed"
        assert set(payload["data"]) == {"id", "status"}
        assert payload["timestamp"].endswith("Z")
    assert len({request.headers["webhook-id"] for request in requests}) == 2
    # what a receiver written with `express.raw({type: "application/json"})` needs to read the body at all
    assert all(request.headers["content-type"] == "application/json" for request in requests)
    await receiver.nothing_more(2, 0.5)
    attempts = await _deliveries(stack, client._api_client.api_key or "", webhook_id)
    assert [a["outcome"] for a in attempts] == ["delivered", "delivered"]
    assert all(a["result"]["status_code"] == 200 for a in attempts)
    if stack.topology.embedded_worker:
        # the worker in the web process counts its attempts where /metrics shows them
        async def counted() -> bool:
            async with httpx.AsyncClient(base_url=stack.url) as http:
                text = (await http.get("/metrics")).text
            return 'ix_webhook_attempts_total{kind="webhook",outcome="delivered"}' in text

        await until_async(counted, within=5)


async def test_a_webhook_config_is_signed_with_a_jwt_of_the_jwks(stack: Stack, receiver: Receiver) -> None:
    client = sdk(stack.url, new_key())
    config = {"uris": [receiver.uri], "user_metadata": {"job": "42", "n": 1}}
    created = interaction(
        await client.aio.interactions.create(
            model="echo",
            input="hi",
            background=True,
            webhook_config=config,
        )
    )
    [request] = await receiver.wait_for(1)
    verify_dynamic(request, stack.url, ISSUER)
    assert request.headers["content-type"] == "application/json"
    payload = json.loads(request.body)
    assert payload["type"] == COMPLETED
    assert payload["data"] == {
        "id": created.id,
        "status": "completed",
        "user_metadata": config["user_metadata"],
    }
    assert (await client.aio.interactions.get(created.id or "")).webhook_config is not None


async def test_failed_and_cancelled_ends_are_their_own_events(
    workers_stack: Stack, receiver: Receiver
) -> None:
    client = sdk(workers_stack.url, new_key())
    _, secret = await _webhook(client, receiver.uri)
    failed = interaction(await client.aio.interactions.create(model="broken", input="x", background=True))
    slow = interaction(
        await client.aio.interactions.create(model="echo-slow", input="word " * 200, background=True)
    )
    await until_async(lambda: _status_is(client, slow.id or "", "in_progress"))
    await client.aio.interactions.cancel(slow.id or "")
    await receiver.wait_for(2, within=20)
    by_id = {p["data"]["id"]: p for p in (verify_static(r, secret) for r in receiver.requests)}
    assert by_id[failed.id]["type"] == FAILED
    assert by_id[failed.id]["data"]["status"] == "failed"
    assert by_id[failed.id]["data"]["error_code"] and by_id[failed.id]["data"]["error_message"]
    assert by_id[slow.id]["type"] == CANCELLED
    assert by_id[slow.id]["data"] == {"id": slow.id, "status": "cancelled"}


async def test_a_function_call_is_a_requires_action_event(stack: Stack, receiver: Receiver) -> None:
    client = sdk(stack.url, new_key())
    _, secret = await _webhook(client, receiver.uri, ["interaction.requires_action"])
    tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}
    call = interaction(await client.aio.interactions.create(model="echo", input="Paris", tools=[tool]))
    assert call.status == "requires_action"
    [request] = await receiver.wait_for(1)
    payload = verify_static(request, secret)
    assert payload["type"] == "interaction.requires_action"
    assert payload["data"] == {"id": call.id, "status": "requires_action"}


async def _status_is(client: genai.Client, interaction_id: str, status: str) -> bool:
    return (await client.aio.interactions.get(interaction_id)).status == status


async def test_only_subscribed_events_are_sent(workers_stack: Stack, receiver: Receiver) -> None:
    client = sdk(workers_stack.url, new_key())
    await _webhook(client, receiver.uri, [FAILED])
    await client.aio.interactions.create(model="echo", input="fine")
    failed = interaction(await client.aio.interactions.create(model="broken", input="x", background=True))
    [request] = await receiver.wait_for(1)
    assert json.loads(request.body)["data"]["id"] == failed.id
    await receiver.nothing_more(1, 1.0)


async def test_webhook_config_uris_are_told_instead_of_the_registered_webhooks(
    workers_stack: Stack, receiver: Receiver
) -> None:
    """Google's SDK: "If set, these webhook URIs will be used for webhook events instead of the registered
    webhooks". Unset (or empty), the registered webhooks hear of the interaction as usual."""
    client = sdk(workers_stack.url, new_key())
    async with Receiver() as registered:
        await _webhook(client, registered.uri)
        config = {"uris": [receiver.uri], "user_metadata": {"job": "7"}}
        own = interaction(
            await client.aio.interactions.create(model="echo", input="a", webhook_config=config)
        )
        failed = interaction(
            await client.aio.interactions.create(
                model="broken", input="b", background=True, webhook_config={"uris": [receiver.uri]}
            )
        )
        plain = interaction(await client.aio.interactions.create(model="echo", input="c"))
        empty = interaction(
            await client.aio.interactions.create(model="echo", input="d", webhook_config={"uris": []})
        )
        told = {json.loads(r.body)["data"]["id"]: json.loads(r.body) for r in await receiver.wait_for(2)}
        heard = {json.loads(r.body)["data"]["id"] for r in await registered.wait_for(2)}
        await receiver.nothing_more(2, 1.0)
        await registered.nothing_more(2, 0.0)
    assert set(told) == {own.id, failed.id}
    assert told[own.id]["data"]["user_metadata"] == {"job": "7"} and told[failed.id]["type"] == FAILED
    assert heard == {plain.id, empty.id}


async def test_a_receiver_down_for_a_while_gets_the_event_once_up(workers_stack: Stack) -> None:
    """Three attempts answered 503, then a 200: four requests with one webhook-id, each signed afresh,
    and no more after the 200; the deliveries say so."""
    async with Receiver() as receiver:
        receiver.server.add(*[Script(status=503, body=b"down")] * 3)
        key = new_key()
        client = sdk(workers_stack.url, key)
        webhook_id, secret = await _webhook(client, receiver.uri)
        await client.aio.interactions.create(model="echo", input="hi")
        requests = await receiver.wait_for(4, within=20)
        assert len({r.headers["webhook-id"] for r in requests}) == 1
        for request in requests:
            verify_static(request, secret)
        await receiver.nothing_more(4, 2.0)
    attempts = await _deliveries(workers_stack, key, webhook_id)
    assert [a["outcome"] for a in attempts] == ["delivered", "retry", "retry", "retry"]
    assert [a["attempt"] for a in attempts] == [4, 3, 2, 1]
    assert attempts[1]["result"]["error"] and attempts[1]["result"]["status_code"] == 503


async def test_a_rotation_that_keeps_the_old_secret_signs_with_both(
    workers_stack: Stack, receiver: Receiver
) -> None:
    client = sdk(workers_stack.url, new_key())
    webhook_id, old = await _webhook(client, receiver.uri)
    rotated = await client.aio.webhooks.rotate_signing_secret(webhook_id)
    new = rotated.secret or ""
    await client.aio.interactions.create(model="echo", input="hi")
    [request] = await receiver.wait_for(1)
    assert len(signatures(request)) == 2
    verify_static(request, old)
    verify_static(request, new)
    await client.aio.webhooks.rotate_signing_secret(
        webhook_id, revocation_behavior="revoke_previous_secrets_immediately"
    )
    await client.aio.interactions.create(model="echo", input="again")
    [_, second] = await receiver.wait_for(2)
    assert len(signatures(second)) == 1
    with pytest.raises(Exception, match="signature"):
        verify_static(second, new)


async def test_a_webhook_whose_events_keep_failing_is_disabled(workers_stack: Stack) -> None:
    """Every attempt of two events fails (their retries last 10 s here): the webhook is then
    `disabled_due_to_failed_deliveries`, and the next end sends it nothing."""
    async with Receiver(Script(status=500, body=b"no")) as receiver:
        client = sdk(workers_stack.url, new_key())
        webhook_id, _ = await _webhook(client, receiver.uri)
        await client.aio.interactions.create(model="echo", input="one")
        await client.aio.interactions.create(model="echo", input="two")

        async def disabled() -> bool:
            state = (await client.aio.webhooks.get(webhook_id)).state
            return state == "disabled_due_to_failed_deliveries"

        await until_async(disabled, within=30, interval=0.5)
        seen = len(receiver.requests)
        await client.aio.interactions.create(model="echo", input="three")
        await receiver.nothing_more(seen, 1.5)


async def test_a_ping_is_a_signed_test_delivery(stack: Stack, receiver: Receiver) -> None:
    client = sdk(stack.url, new_key())
    webhook_id, secret = await _webhook(client, receiver.uri)
    await client.aio.webhooks.ping(webhook_id)
    [request] = await receiver.wait_for(1)
    payload = verify_static(request, secret)
    assert payload["type"] == PING and payload["data"] == {"webhook_id": webhook_id}


async def test_another_tenants_webhooks_never_hear_of_ours(workers_stack: Stack) -> None:
    async with Receiver() as ours, Receiver() as theirs:
        mine, other = sdk(workers_stack.url, new_key()), sdk(workers_stack.url, new_key())
        await _webhook(mine, ours.uri)
        await _webhook(other, theirs.uri)
        await mine.aio.interactions.create(model="echo", input="mine")
        await ours.wait_for(1)
        await theirs.nothing_more(0, 1.0)


async def test_no_listener_queues_no_event_job(workers_stack: Stack) -> None:
    """An end nobody listens to costs no job: the script that ends it checks the tenant's enabled set."""
    key = new_key()
    client = sdk(workers_stack.url, key)
    done = interaction(await client.aio.interactions.create(model="echo", input="hi", background=True))
    await until_async(lambda: _status_is(client, done.id or "", "completed"))
    async with aioredis.Redis.from_url(workers_stack.redis_url) as redis:
        assert not [k async for k in redis.scan_iter(match=f"arq:job:whev/{tenant_of(key)}/*")]


async def test_a_worker_killed_mid_delivery_loses_nothing(workers_stack: Stack) -> None:
    """The receiver holds its answer; the worker sending it is SIGKILLed; a new worker sends the event
    again, with the same webhook-id, once the dead one's mark on the job runs out."""
    async with Receiver() as receiver:
        receiver.server.add(Script(status=200, body=b"{}", head_delay=30))
        client = sdk(workers_stack.url, new_key())
        _, secret = await _webhook(client, receiver.uri)
        await client.aio.interactions.create(model="echo", input="hi")
        [first] = await receiver.wait_for(1)
        [worker] = workers_stack.workers
        worker.signal(9)
        worker.wait(10)
        workers_stack.workers.clear()
        workers_stack.start_worker()
        [_, again] = await receiver.wait_for(2, within=40)
        assert again.headers["webhook-id"] == first.headers["webhook-id"]
        verify_static(again, secret)
        await receiver.nothing_more(2, 1.0)
    await asyncio.sleep(0)
