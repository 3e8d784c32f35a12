"""The events webhooks hear of, and the thin payload each delivery carries (pointers and status, not the
output: a receiver that wants the output GETs the interaction).

    {"type": "interaction.completed", "version": "v1", "timestamp": "2026-05-04T12:00:00Z",
     "data": {"id": "v1_…", "status": "completed"}}

Failures add `error_code` and `error_message` to `data`; deliveries to a request's `webhook_config` add its
`user_metadata`. An interaction that stopped at its output limit (`incomplete`) is `interaction.completed`
with that status: Google's events have no other name for a run that ended on its own, and a receiver waiting
for the job's end must hear of it.
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
    st.FAILED: FAILED,
    st.CANCELLED: CANCELLED,
    st.REQUIRES_ACTION: REQUIRES_ACTION,
}
#: what a webhook may subscribe to
SUBSCRIBABLE: Final = frozenset(BY_STATUS.values())


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


_encode = msgspec.json.Encoder().encode


def body(event: Event) -> bytes:
    """The delivery's body: the bytes every attempt sends and signs."""
    return _encode(event)


def event_id(tenant: str, interaction_id: str, status: str) -> str:
    """The `webhook-id` of an interaction's end: the same for every retry and every target, and for a job
    run twice (receivers deduplicate on it); another tenant's interaction of the same id gets another."""
    digest = hashlib.sha256(f"{tenant}/{interaction_id}/{status}".encode()).hexdigest()
    return f"whevt_{digest[:32]}"


def ping_id() -> str:
    """A ping is an event of its own each time."""
    return f"whevt_ping_{secrets.token_hex(12)}"
