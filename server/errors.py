"""Every exception the server raises on purpose, in one hierarchy (it imports nothing of the server).

    ServerError
    ├── RequestError                the request cannot be served as sent: a 4xx, whatever layer found it
    │   ├── InvalidArgument         400, names the offending field (`input[2].type`)
    │   │   └── UriRefused          a webhook URI we will not call (server.webhooks.addresses), and
    │   │       └── HostNotResolved   one whose host did not resolve (at delivery: worth a retry)
    │   ├── NotFound                404, an interaction unknown to this tenant (or expired, or deleted)
    │   ├── WebhookNotFound         404, a webhook unknown to this tenant
    │   ├── AgentNotFound           404, an agent unknown to this tenant
    │   ├── TriggerNotFound         404, a trigger unknown to this tenant
    │   ├── LimitReached            429 RESOURCE_EXHAUSTED, a per-tenant quota (webhooks.max_webhooks)
    │   │   └── OverLimit           a tenant's rate or token limit ([auth.limits]), with when to retry
    │   ├── Unfinished              400, a chain cannot continue from a running interaction
    │   └── ChainTooDeep            400, the chain is longer than `store.max_chain_depth`
    ├── UpstreamError               the model's server failed or refused (server.upstream.base); the API
    │                               maps its status (a 429 stays a 429, a 5xx becomes a 502)
    ├── ApiError                    an HTTP answer the API layer chooses itself (api/errors.py): no route,
    │                               a body too large or too slow, an upstream failure mapped
    ├── SealError                   a sealed secret or signing key cannot be opened (server.webhooks.secrets):
    │                               UnknownServerKey (sealed with a key not configured), BrokenSeal
    └── StoreConflict               a compare-and-set lost: never shown to a client, the caller decides
        ├── Fenced                  another runner owns the interaction now (a newer fence)
        ├── StatusChanged           the status is not one the transition starts from (`current` says)
        ├── StaleJob                a job queued under a fence the interaction has moved past
        └── AttemptsExhausted       a lost run was tried `runner.max_attempts` times

A Redis outage is not in this tree: it is whatever redis-py and the OS raise for an unreachable or hung
server (`store.outage.UNAVAILABLE`), answered with a 503. Configuration errors (`config_errors`) stop the
process before it serves and never reach a request.

`api/errors.py` maps a RequestError to its HTTP status by looking its class up in `HTTP_STATUS`.
"""

from __future__ import annotations

from typing import Final

#: what clients are told while Redis is away (a 503, or an `error` event that ends a stream)
UNAVAILABLE_MESSAGE: Final = "The interaction store (Redis) is unavailable; retry shortly"


def shorten(text: str, limit: int = 80) -> str:
    """A value from a request, cut for a message (an id as sent can be megabytes long)."""
    return text if len(text) <= limit else text[:limit] + "..."


class ServerError(Exception):
    """The root of every error this server raises on purpose."""


class RequestError(ServerError):
    """A client error: the request, not the server, must change."""


class InvalidArgument(RequestError):
    """`field` is the path of the offending value (`input[2].type`), when there is one."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def __str__(self) -> str:
        if self.field:
            return f"Invalid value at `{self.field}`: {self.message}"
        return self.message


class NotFound(RequestError):
    """An interaction that does not exist for this tenant (unknown, expired, deleted or someone else's)."""

    def __init__(self, interaction_id: str) -> None:
        super().__init__(f"Interaction {shorten(interaction_id)!r} was not found")
        self.interaction_id = interaction_id


class WebhookNotFound(RequestError):
    """A webhook that does not exist for this tenant (unknown, deleted, malformed or someone else's)."""

    def __init__(self, webhook_id: str) -> None:
        super().__init__(f"Webhook {shorten(webhook_id)!r} was not found")
        self.webhook_id = webhook_id


class AgentNotFound(RequestError):
    """An agent that does not exist for this tenant (unknown, deleted, malformed or someone else's)."""

    def __init__(self, agent_id: str) -> None:
        super().__init__(f"Agent {shorten(agent_id)!r} was not found")
        self.agent_id = agent_id


class TriggerNotFound(RequestError):
    """A trigger that does not exist for this tenant (unknown, deleted, malformed or someone else's)."""

    def __init__(self, trigger_id: str) -> None:
        super().__init__(f"Trigger {shorten(trigger_id)!r} was not found")


class LimitReached(RequestError):
    """A per-tenant quota is used up: Google answers quotas with 429 RESOURCE_EXHAUSTED. A retry does not
    help until the tenant frees some (the SDK retries 429s: a client with retries on waits for nothing)."""


class OverLimit(LimitReached):
    """A tenant's limit (server/limits/) refuses a request: `limit` names it (requests_per_minute,
    tokens_per_minute, tokens_per_day, background_runs), `value` is its value, and a request `retry_after`
    seconds later would be admitted (as far as this one's count goes)."""

    def __init__(self, limit: str, value: int, retry_after: float) -> None:
        why = "one of its background interactions must end first" if limit == "background_runs" else ""
        super().__init__(
            f"This API key's {limit} limit ({value}) is reached; {why or f'retry in {retry_after:.1f} s'}"
        )
        self.limit = limit
        self.value = value
        self.retry_after = retry_after


class Unfinished(RequestError):
    def __init__(self, interaction_id: str) -> None:
        super().__init__(
            f"Interaction {interaction_id!r} has not finished yet: wait until it has finished before "
            "continuing from it"
        )
        self.interaction_id = interaction_id


class ChainTooDeep(RequestError):
    def __init__(self, interaction_id: str, depth: int) -> None:
        super().__init__(f"The chain ending at {interaction_id!r} is longer than {depth} interactions")
        self.interaction_id = interaction_id


class StoreConflict(ServerError):
    """A compare-and-set in Redis found the interaction not as the caller expected."""


class Fenced(StoreConflict):
    def __init__(self, current: str = "") -> None:
        super().__init__(f"another runner owns the interaction (status {current or 'unknown'})")
        self.current = current


class StatusChanged(StoreConflict):
    def __init__(self, current: str) -> None:
        super().__init__(f"the interaction is {current}")
        self.current = current


class StaleJob(StoreConflict):
    def __init__(self, fence: str) -> None:
        super().__init__(f"the interaction has moved on to fence {fence}")
        self.fence = fence


class AlreadyStored(StoreConflict):
    """An interaction with this id is stored already (a retried store whose first try was applied)."""


class KeyUsed(StoreConflict):
    """A create's Idempotency-Key made an interaction already (it is stored): the repeat answers that one."""

    def __init__(self, interaction_id: str, body_digest: str) -> None:
        super().__init__(f"the Idempotency-Key made {interaction_id}")
        self.interaction_id = interaction_id
        self.body_digest = body_digest


class AttemptsExhausted(StoreConflict):
    def __init__(self, attempts: int) -> None:
        super().__init__(f"the run was tried {attempts} times")
        self.attempts = attempts


#: the HTTP status of each client error (the most specific class listed wins)
HTTP_STATUS: Final[dict[type[RequestError], int]] = {
    InvalidArgument: 400,
    NotFound: 404,
    WebhookNotFound: 404,
    AgentNotFound: 404,
    TriggerNotFound: 404,
    LimitReached: 429,
    Unfinished: 400,
    ChainTooDeep: 400,
    RequestError: 400,
}


def http_status(exc: RequestError) -> int:
    for cls in type(exc).__mro__:
        if cls in HTTP_STATUS:
            return HTTP_STATUS[cls]
    return 400
