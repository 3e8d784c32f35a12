"""A delivery job's work: one attempt, signed, and what follows from it.

Each attempt is signed afresh (`webhook-timestamp` is the attempt's, so receivers' 5-minute window holds
on a retry hours later) under the event's one `webhook-id`. A 2xx ends the delivery; a failure queues the
next attempt after a pause drawn from a doubling window (schedule.py), until `retry_for_seconds` after the
interaction ended, to run at its due time (a worker's timer wakes a worker then: runner/due_jobs.py); the
last failure counts against the webhook (webhook_outcome.lua disables it at the limit). The next attempt
is queued before this one is recorded: a worker killed in between leaves this job to be run again (its
mark in progress is short, worker_host.py), which queues nothing twice.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from datetime import UTC, datetime

import msgspec

from ..observability import webhooks as observed
from ..outbound import Outbound
from ..sections import WebhookSettings
from ..settings import Settings
from ..store.store import Store
from ..store.webhook_outcomes import Outcome
from . import secrets, signing
from .addresses import AllowList, Resolver, system_resolver
from .delivery import Attempt, deliver, unsent
from .dispatch import EventDispatch
from .jwks import Keyring
from .pending import Delivery
from .schedule import retry_at_ms

log = logging.getLogger(__name__)


def issuer(settings: Settings) -> str:
    """The `iss` of webhook_config deliveries' JWTs: the configured public URL, or where this server
    listens."""
    return settings.webhooks.issuer or f"http://{settings.http.host}:{settings.http.port}"


class AttemptRecord(msgspec.Struct, kw_only=True, frozen=True):
    """One entry of GET .../webhooks/{id}/deliveries."""

    event_id: str
    event_type: str
    attempt: int
    outcome: Outcome
    result: Attempt
    #: a `retry`: when the next attempt is due (it runs within about a second of it)
    next_attempt_at: datetime | None = None


class Sender:
    def __init__(
        self,
        store: Store,
        dispatch: EventDispatch,
        settings: WebhookSettings,
        server_keys: Sequence[bytes],
        keyring: Keyring,
        issuer: str,
        resolver: Resolver = system_resolver,
        outbound: Outbound | None = None,
    ) -> None:
        self.store = store
        self.dispatch = dispatch
        self.settings = settings
        self.server_keys = list(server_keys)
        self.keyring = keyring
        self.issuer = issuer
        self.allow = AllowList.parse(settings.allow)
        self.resolver = resolver
        #: the proxies and trust store of every delivery (one TLS context for all of them)
        self.outbound = outbound if outbound is not None else Outbound.from_environment()

    async def send(self, delivery: Delivery) -> None:
        outcomes = self.store.webhook_outcomes
        if await outcomes.delivered(delivery.tenant, delivery.event_id, delivery.target):
            return
        try:
            prepared = await self._prepare(delivery)
        except secrets.SealError as exc:
            # a server key that changed without its predecessor kept in IX_WEBHOOK_KEYS: every attempt
            # fails the same way, so it is said on each, and the event takes its course of retries
            log.error("webhook %s: its signing secret cannot be opened: %s", delivery.webhook_id, exc)
            result = unsent(f"signing secret: {exc}")
        else:
            if prepared is None:
                return
            uri, headers = prepared
            result = await deliver(
                uri,
                headers,
                delivery.body.encode(),
                allow=self.allow,
                resolver=self.resolver,
                timeout_seconds=self.settings.attempt_timeout_seconds,
                outbound=self.outbound,
            )
        outcome, retry_at = await self._follow_up(delivery, result)
        entry = AttemptRecord(
            event_id=delivery.event_id,
            event_type=delivery.event_type,
            attempt=delivery.attempt,
            outcome=outcome,
            result=result,
            next_attempt_at=None if retry_at is None else datetime.fromtimestamp(retry_at / 1000, UTC),
        )
        await outcomes.record(
            delivery.tenant,
            webhook_id=delivery.webhook_id,
            event_id=delivery.event_id,
            target=delivery.target,
            outcome=outcome,
            attempt=msgspec.json.encode(entry),
        )
        observed.attempted(delivery.kind, outcome, result.latency_ms / 1000)
        if result.delivered:
            observed.delivered(delivery.kind, time.time() - delivery.first_ms / 1000)

    async def _prepare(self, delivery: Delivery) -> tuple[str, dict[str, str]] | None:
        """The URI and signed headers of this attempt; None when its webhook is gone or was disabled
        (its pending events are dropped with it; a ping still goes to a disabled one)."""
        stamp = int(time.time())
        body = delivery.body.encode()
        webhook_id = delivery.webhook_id
        if webhook_id is None:
            key = await self.keyring.current()
            headers = signing.dynamic_headers(delivery.event_id, stamp, body, key, self.issuer)
            return delivery.uri or "", headers
        webhook = await self.store.webhooks.get(delivery.tenant, webhook_id)
        if webhook is None or (delivery.retries and webhook.state != "enabled"):
            log.info("webhook %s is gone or disabled: event %s is not sent", webhook_id, delivery.event_id)
            return None
        context = secrets.secret_context(delivery.tenant, webhook_id)
        opened = [
            secrets.unseal(secret.sealed, self.server_keys, context=context).decode()
            for secret in webhook.valid_secrets(stamp * 1000)
        ]
        return webhook.uri, signing.static_headers(delivery.event_id, stamp, body, opened)

    async def _follow_up(self, delivery: Delivery, result: Attempt) -> tuple[Outcome, int | None]:
        """What this attempt came to, and when the next one is due (ms); a failed one with time left
        queues the next attempt first."""
        if result.delivered:
            return "delivered", None
        if not delivery.retries:
            return "logged", None
        run_at = self.next_attempt_ms(delivery, time.time())
        if run_at is None:
            log.warning(
                "webhook event %s to %s failed for good after %d attempts: %s",
                delivery.event_id,
                delivery.target,
                delivery.attempt,
                result.error,
            )
            return "failed", None
        await self.dispatch.enqueue(delivery.next(), run_at_ms=run_at)
        return "retry", run_at

    def next_attempt_ms(self, delivery: Delivery, now: float) -> int | None:
        """When the next attempt runs (ms), or None when it would be past the retries' end
        (schedule.py)."""
        return retry_at_ms(self.settings, delivery.attempt, delivery.first_ms, now)
