"""The events webhooks hear of, and the thin payload each delivery carries (pointers and status, not the
output: a receiver that wants the output GETs the interaction).

    {"type": "interaction.completed", "version": "v1", "timestamp": "2026-05-04T12:00:00Z",
     "data": {"id": "v1_…", "status": "completed"}}

Failures add `error_code` and `error_message` to `data`; deliveries to a request's `webhook_config` add its
`user_metadata`. An interaction that stopped at its output limit (`incomplete`) is `interaction.completed`
with that status: Google's events have no other name for a run that ended on its own, and a receiver waiting
for the job's end must hear of it.

Webhooks may also subscribe to OpenAI's events of a response (an interaction is a response in the Responses
dialect: the same record, the same id), which carry OpenAI's payload, a pointer only:

    {"object": "event", "id": "evt_…", "type": "response.completed", "created_at": 1767225600,
     "data": {"id": "v1_…"}}

OpenAI names an incomplete response apart, and has no event for a function call: a response that stopped
to call one is `completed` in its dialect (its output holds the `function_call` items), so
`requires_action` is `response.completed` there.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any, Final

import msgspec

from ..protocol import status as st

COMPLETED: Final = "interaction.completed"
FAILED: Final = "interaction.failed"
CANCELLED: Final = "interaction.cancelled"
REQUIRES_ACTION: Final = "interaction.requires_action"
#: what `:ping` sends: this server's name for Google's test delivery
PING: Final = "webhook.ping"
VERSION: Final = "v1"

#: the event of each end webhooks hear of (protocol/lifecycle.py NOTIFIED)
BY_STATUS: Final[dict[str, str]] = {
    st.COMPLETED: COMPLETED,
    st.INCOMPLETE: COMPLETED,
    st.BUDGET_EXCEEDED: COMPLETED,
    st.FAILED: FAILED,
    st.CANCELLED: CANCELLED,
    st.REQUIRES_ACTION: REQUIRES_ACTION,
}
RESPONSE_COMPLETED: Final = "response.completed"
RESPONSE_INCOMPLETE: Final = "response.incomplete"
RESPONSE_FAILED: Final = "response.failed"
RESPONSE_CANCELLED: Final = "response.cancelled"
#: OpenAI's event of each end (the same ends as BY_STATUS)
RESPONSE_BY_STATUS: Final[dict[str, str]] = {
    st.COMPLETED: RESPONSE_COMPLETED,
    st.INCOMPLETE: RESPONSE_INCOMPLETE,
    st.BUDGET_EXCEEDED: RESPONSE_INCOMPLETE,
    st.FAILED: RESPONSE_FAILED,
    st.CANCELLED: RESPONSE_CANCELLED,
    st.REQUIRES_ACTION: RESPONSE_COMPLETED,
}
#: what a webhook may subscribe to
SUBSCRIBABLE: Final = frozenset({*BY_STATUS.values(), *RESPONSE_BY_STATUS.values()})


class EventData(msgspec.Struct, kw_only=True, omit_defaults=True):
    id: str
    status: str
    error_code: str | None = None
    error_message: str | None = None
    user_metadata: dict[str, Any] | None = None


class PingData(msgspec.Struct, kw_only=True):
    webhook_id: str


class Event(msgspec.Struct, kw_only=True):
    type: str
    version: str = VERSION
    timestamp: str
    data: EventData | PingData


class ResponseRef(msgspec.Struct, kw_only=True):
    id: str


class ResponseEvent(msgspec.Struct, kw_only=True):
    """OpenAI's webhook event (the openai SDK's `ResponseCompletedWebhookEvent` and its siblings)."""

    object: str = "event"
    #: the event's id, also its `webhook-id`
    id: str
    type: str
    #: Unix seconds of the end
    created_at: int
    data: ResponseRef


class Outgoing(msgspec.Struct, kw_only=True, frozen=True):
    """An event as made once for all its targets: its `webhook-id`, its name, and the bytes sent."""

    id: str
    type: str
    body: str


_encode = msgspec.json.Encoder().encode


def body(event: Event | ResponseEvent) -> bytes:
    """The delivery's body: the bytes every attempt sends and signs."""
    return _encode(event)


def response_event(tenant: str, interaction_id: str, status: str, ended_ms: int) -> Outgoing:
    """OpenAI's event of an interaction's end (`status` one of RESPONSE_BY_STATUS)."""
    event_type = RESPONSE_BY_STATUS[status]
    event = ResponseEvent(
        id=response_event_id(tenant, interaction_id, status),
        type=event_type,
        created_at=ended_ms // 1000,
        data=ResponseRef(id=interaction_id),
    )
    return Outgoing(id=event.id, type=event_type, body=body(event).decode())


def event_id(tenant: str, interaction_id: str, status: str) -> str:
    """The `webhook-id` of an interaction's end: the same for every retry and every target, and for a job
    run twice (receivers deduplicate on it); another tenant's interaction of the same id gets another."""
    digest = hashlib.sha256(f"{tenant}/{interaction_id}/{status}".encode()).hexdigest()
    return f"whevt_{digest[:32]}"


def response_event_id(tenant: str, interaction_id: str, status: str) -> str:
    """The id of OpenAI's event of an interaction's end, as stable as `event_id` and another one: a
    receiver subscribed to both kinds deduplicates each on its own id, and each has its own delivery.
    `evt_` and 32 hex digits, the form of OpenAI's event ids."""
    digest = hashlib.sha256(f"{tenant}/{interaction_id}/{status}/response".encode()).hexdigest()
    return f"evt_{digest[:32]}"


def ping_id() -> str:
    """A ping is an event of its own each time."""
    return f"whevt_ping_{secrets.token_hex(12)}"
