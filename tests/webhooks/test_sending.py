"""One delivery attempt's consequences, in-process against a private Redis: a secret that cannot be
opened, a webhook deleted while its event waits, and the mark of a delivered event (the retries'
schedule: test_retry_schedule.py)."""

from __future__ import annotations

import os
import time

import msgspec
import pytest

from server.sections import WebhookSettings
from server.store import keys
from server.store.store import Store
from server.webhooks.dispatch import EventDispatch
from server.webhooks.jwks import Keyring
from server.webhooks.pending import WEBHOOK_TARGET, Delivery
from server.webhooks.resource import WebhookResource
from server.webhooks.sending import Sender
from server.webhooks.wire import CreateWebhook
from tests.fakes.http import Script

from .receivers import Receiver

TENANT = "t-sending"
SETTINGS = WebhookSettings(
    allow=["127.0.0.0/8"],
    backoff_initial_seconds=2.0,
    backoff_max_seconds=10.0,
    retry_for_seconds=60.0,
)


def _sender(store: Store, server_key: bytes, settings: WebhookSettings = SETTINGS) -> Sender:
    keyring = Keyring(store.signing_keys, [server_key])
    return Sender(store, EventDispatch(store), settings, [server_key], keyring, "https://issuer.test")


def _delivery(webhook_id: str, **changes: object) -> Delivery:
    delivery = Delivery(
        tenant=TENANT,
        event_id="whevt_test",
        event_type="interaction.completed",
        body='{"type":"interaction.completed"}',
        target=WEBHOOK_TARGET + webhook_id,
        first_ms=int(time.time() * 1000),
    )
    return msgspec.structs.replace(delivery, **changes)


async def _webhook(store: Store, server_key: bytes, uri: str) -> str:
    resource = WebhookResource(store.webhooks, SETTINGS, [server_key])
    created = await resource.create(
        TENANT, CreateWebhook(uri=uri, subscribed_events=["interaction.completed"])
    )
    assert created.id is not None
    return created.id


async def test_a_secret_that_cannot_be_opened_is_a_failed_attempt_and_retried(store: Store) -> None:
    """The server key changed without the old one kept: nothing is sent, the attempt says why, and the
    event keeps its retries (the operator may still put the old key back)."""
    async with Receiver() as receiver:
        webhook_id = await _webhook(store, os.urandom(32), receiver.uri)
        await _sender(store, os.urandom(32)).send(_delivery(webhook_id))
        assert receiver.requests == []
    [entry] = await store.webhooks.deliveries(TENANT, webhook_id, 10)
    attempt = msgspec.json.decode(entry)
    assert attempt["outcome"] == "retry"
    assert attempt["result"]["error"].startswith("signing secret:")
    assert attempt["result"]["status_code"] is None
    assert await store.redis.exists(keys.arq_job(_delivery(webhook_id, attempt=2).job_id))


async def test_an_event_for_a_deleted_webhook_is_dropped(store: Store) -> None:
    server_key = os.urandom(32)
    async with Receiver() as receiver:
        gone = await _webhook(store, server_key, receiver.uri)
        await store.webhooks.delete(TENANT, gone)
        await _sender(store, server_key).send(_delivery(gone))
        assert receiver.requests == []


@pytest.mark.parametrize("status", [200, 500])
async def test_a_delivered_mark_stops_a_later_attempt(store: Store, status: int) -> None:
    """Once an event reached its target, a retry queued before that (a worker killed after the 2xx, its
    job run again) sends nothing; a failed attempt leaves no mark."""
    server_key = os.urandom(32)
    async with Receiver() as receiver:
        receiver.server.default = Script(status=status, body=b"{}")
        webhook_id = await _webhook(store, server_key, receiver.uri)
        sender = _sender(store, server_key)
        await sender.send(_delivery(webhook_id))
        await sender.send(_delivery(webhook_id, attempt=2))
        assert len(receiver.requests) == (1 if status == 200 else 2)
