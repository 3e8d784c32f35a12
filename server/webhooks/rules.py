"""What the Webhooks resource accepts: ids, events, names, states, update masks and list paging (pure)."""

from __future__ import annotations

import re
import secrets
from typing import Final

from ..errors import InvalidArgument, WebhookNotFound

#: `wh_` and 22 url-safe characters (128 random bits)
_ID = re.compile(r"wh_[A-Za-z0-9_-]{22}")

#: the events this server fires
INTERACTION_EVENTS: Final = (
    "interaction.requires_action",
    "interaction.completed",
    "interaction.failed",
    "interaction.cancelled",
)
#: OpenAI's events of the same ends, in its payload (events.py): an interaction is a response there
RESPONSE_EVENTS: Final = (
    "response.completed",
    "response.incomplete",
    "response.failed",
    "response.cancelled",
)
#: what a webhook may subscribe to: either kind, or both
EVENTS: Final = (*INTERACTION_EVENTS, *RESPONSE_EVENTS)
#: events Google's API knows for resources this server does not have
ELSEWHERE: Final = {
    "batch.succeeded": "batches",
    "batch.expired": "batches",
    "batch.failed": "batches",
    "video.generated": "video generation",
}
USER_STATES: Final = ("enabled", "disabled")
REVOCATIONS: Final = ("revoke_previous_secrets_after_h24", "revoke_previous_secrets_immediately")
MASKABLE: Final = ("name", "uri", "subscribed_events", "state")
#: the JSON (camelCase) spellings of mask paths, which Google's field masks accept too
_CAMEL: Final = {"subscribedEvents": "subscribed_events"}
MAX_NAME_LENGTH: Final = 256

#: list paging, as the SDK documents it: 50 by default, 1000 at most (more is read as 1000, AIP-158)
DEFAULT_PAGE_SIZE: Final = 50
MAX_PAGE_SIZE: Final = 1000


def new_id() -> str:
    return "wh_" + secrets.token_urlsafe(16)


def is_webhook_id(value: str) -> bool:
    return _ID.fullmatch(value) is not None


def checked_id(value: str) -> str:
    """An id as sent; one that cannot be ours is simply not found."""
    if not is_webhook_id(value):
        raise WebhookNotFound(value)
    return value


def events(values: list[str] | None, field: str = "subscribed_events") -> list[str]:
    """The subscribed events, in order, without repeats; at least one, each one this server fires."""
    if not values:
        raise InvalidArgument("at least one event is required", field)
    for place, value in enumerate(values):
        where = f"{field}[{place}]"
        if value in ELSEWHERE:
            raise InvalidArgument(
                f"{value!r} is not available: this server has no {ELSEWHERE[value]}, so it never fires; "
                f"subscribe to {', '.join(EVENTS)}",
                where,
            )
        if value not in EVENTS:
            raise InvalidArgument(f"unknown event {value!r}: expected one of {', '.join(EVENTS)}", where)
    return list(dict.fromkeys(values))


def name(value: str | None) -> str | None:
    if value is not None and len(value) > MAX_NAME_LENGTH:
        raise InvalidArgument(f"at most {MAX_NAME_LENGTH} characters", "name")
    return value or None


def user_state(value: str | None) -> str:
    if value not in USER_STATES:
        shown = "missing" if value is None else repr(value)
        raise InvalidArgument(f"{shown}: a webhook can be set to 'enabled' or 'disabled' only", "state")
    return value


def revocation(value: str | None) -> str:
    if value is None:
        return REVOCATIONS[0]
    if value not in REVOCATIONS:
        raise InvalidArgument(f"{value!r}: expected one of {', '.join(REVOCATIONS)}", "revocation_behavior")
    return value


def mask(value: str) -> list[str]:
    """The fields an update_mask names (comma-separated, snake_case or camelCase)."""
    paths = [_CAMEL.get(path.strip(), path.strip()) for path in value.split(",") if path.strip()]
    for path in paths:
        if path not in MASKABLE:
            raise InvalidArgument(
                f"unknown field {path!r}: expected some of {', '.join(MASKABLE)}", "update_mask"
            )
    if not paths:
        raise InvalidArgument(f"names no field: expected some of {', '.join(MASKABLE)}", "update_mask")
    return list(dict.fromkeys(paths))
