"""An interaction's end, turned into one delivery job per target (the event job's work), and pings.

The event job is queued by the script that ends the interaction (store/scripts/_notify.lua), so it exists
exactly when the end does; it is the job of the end's every subscriber (worker_jobs.interaction_ended: a
trigger's execution hears it too), and this is its webhooks' part. It reads the record, finds its
targets, and queues a delivery per target: the request's `webhook_config.uris` when it names any (instead
of the registered webhooks, as Google's SDK documents them), else the tenant's enabled webhooks
subscribed to the event. An end is two events: Google's
`interaction.*` and OpenAI's `response.*` (events.py); a webhook subscribed to both gets both, each a
delivery of its own, with its own id. `webhook_config.uris` get Google's only: they are Google's feature,
documented to receive its events, and a receiver ported from Google would not know OpenAI's (OpenAI has no
per-request webhooks). A job per target and per attempt, named by both (pending.py): an event job run twice
(its worker died) queues nothing twice.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime

import msgspec

from ..errors import NotFound
from ..protocol import lifecycle
from ..protocol import status as st
from ..protocol.records import CHAT_COMPLETIONS, Record
from ..store.jobs import DELIVERY_JOB
from ..store.store import Store
from . import events
from .pending import CONFIG_TARGET, WEBHOOK_TARGET, Delivery, to_job

log = logging.getLogger(__name__)


class EventDispatch:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def dispatch(self, tenant: str, interaction_id: str, ended_ms: int | None = None) -> int:
        """Queue the deliveries of an interaction's end (at `ended_ms`, else its record's second);
        returns how many."""
        try:
            record = await self.store.interactions.get(tenant, interaction_id)
        except NotFound:
            # deleted between its end and this job: there is nothing left to point a receiver at
            log.info("interaction %s was deleted before its webhooks were told of its end", interaction_id)
            return 0
        status = lifecycle.wire_status(record.status)
        if status not in events.BY_STATUS:
            return 0
        ended = ended_ms if ended_ms is not None else _ms(record.updated)
        deliveries = await self._targets(tenant, record, status, ended)
        for delivery in deliveries:
            await self.enqueue(delivery)
        return len(deliveries)

    async def ping(self, tenant: str, webhook_id: str) -> None:
        """A signed test delivery to a webhook, tried once, by a worker."""
        now = datetime.now(UTC)
        event = events.Event(
            type=events.PING, timestamp=_rfc3339(now), data=events.PingData(webhook_id=webhook_id)
        )
        await self.enqueue(
            Delivery(
                tenant=tenant,
                event_id=events.ping_id(),
                event_type=events.PING,
                body=events.body(event).decode(),
                target=WEBHOOK_TARGET + webhook_id,
                first_ms=int(now.timestamp() * 1000),
                retries=False,
            )
        )

    async def enqueue(self, delivery: Delivery, *, run_at_ms: int | None = None) -> bool:
        return await self.store.jobs.enqueue_call(
            delivery.job_id, DELIVERY_JOB, (to_job(delivery),), run_at_ms=run_at_ms
        )

    async def _targets(self, tenant: str, record: Record, status: str, first_ms: int) -> list[Delivery]:
        data = _data(record, status)

        def delivery(event: events.Outgoing, target: str, uri: str | None = None) -> Delivery:
            return Delivery(
                tenant=tenant,
                event_id=event.id,
                event_type=event.type,
                body=event.body,
                target=target,
                uri=uri,
                first_ms=first_ms,
            )

        config = record.config.config.webhook_config
        if config is not None and config.uris:
            # instead of the registered webhooks, as Google's SDK documents `webhook_config.uris`: every
            # event of this interaction, with its user_metadata (they subscribe to nothing)
            with_metadata = msgspec.structs.replace(data, user_metadata=config.user_metadata)
            event = _interaction_event(tenant, record, status, with_metadata)
            return [delivery(event, f"{CONFIG_TARGET}{n}", uri) for n, uri in enumerate(config.uris)]
        made = [_interaction_event(tenant, record, status, data)]
        if record.config.dialect != CHAT_COMPLETIONS:
            # a stored chat completion is no response: OpenAI tells no webhook of its completions
            made.append(events.response_event(tenant, record.id, status, first_ms))
        return [
            delivery(event, WEBHOOK_TARGET + webhook.id)
            for webhook in await self.store.webhooks.enabled(tenant)
            for event in made
            if event.type in webhook.subscribed_events
        ]


def _interaction_event(tenant: str, record: Record, status: str, data: events.EventData) -> events.Outgoing:
    """Google's event of the end, the same `webhook-id` for every target (its body may differ by target)."""
    event_type = events.BY_STATUS[status]
    body = events.body(events.Event(type=event_type, timestamp=record.updated, data=data))
    return events.Outgoing(id=events.event_id(tenant, record.id, status), type=event_type, body=body.decode())


def _data(record: Record, status: str) -> events.EventData:
    errors = record.output.errors if record.output is not None else None
    if status == st.FAILED and errors:
        return events.EventData(
            id=record.id, status=status, error_code=errors[0].code, error_message=errors[0].message
        )
    return events.EventData(id=record.id, status=status)


def _ms(timestamp: str) -> int:
    """An RFC 3339 time of a record, in ms (now if it cannot be read: the retries' clock starts then)."""
    try:
        return int(datetime.fromisoformat(timestamp).timestamp() * 1000)
    except ValueError:
        return int(time.time() * 1000)


def _rfc3339(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")
