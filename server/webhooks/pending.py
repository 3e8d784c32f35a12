"""A pending delivery: one event on its way to one target, as its jobs carry it from attempt to attempt.

A target is a webhook of the tenant (`w:<id>`: its URI and secrets are read at each attempt, so an update
or a rotation applies to the retries) or a URI of the request's `webhook_config` (`u:<n>`, the URI carried
along). The body is made once, when the event is dispatched: every attempt sends the same bytes.
"""

from __future__ import annotations

import msgspec

WEBHOOK_TARGET = "w:"
CONFIG_TARGET = "u:"


class Delivery(msgspec.Struct, kw_only=True, frozen=True):
    tenant: str
    event_id: str
    event_type: str
    #: the JSON body, as text (the job serializer's strings)
    body: str
    target: str
    #: a `webhook_config` target's URI
    uri: str | None = None
    #: when the interaction ended (ms): the retries stop `retry_for_seconds` after it
    first_ms: int
    attempt: int = 1
    #: False for a ping: tried once, and its failure does not count against the webhook
    retries: bool = True

    @property
    def webhook_id(self) -> str | None:
        return self.target[len(WEBHOOK_TARGET) :] if self.target.startswith(WEBHOOK_TARGET) else None

    @property
    def kind(self) -> str:
        """The metrics' name of the target's kind."""
        if not self.retries:
            return "ping"
        return "webhook" if self.webhook_id is not None else "config"

    @property
    def job_id(self) -> str:
        """A job per attempt: queueing an attempt twice (a job run again after its worker died) queues one."""
        return f"wh/{self.tenant}/{self.event_id}/{self.target}/{self.attempt}"

    def next(self) -> Delivery:
        return msgspec.structs.replace(self, attempt=self.attempt + 1)


def to_job(delivery: Delivery) -> dict[str, object]:
    return msgspec.to_builtins(delivery)  # type: ignore[no-any-return]


def from_job(value: object) -> Delivery:
    return msgspec.convert(value, Delivery)
