"""The webhook deliveries' metrics hooks (families.py names them; metrics.py says how they are buffered)."""

from __future__ import annotations

from typing import Final

from . import buffer, metrics
from .buffer import Count, Spread
from .families import WEBHOOK_ATTEMPT_SECONDS, WEBHOOK_ATTEMPTS, WEBHOOK_EVENT_SECONDS

KINDS: Final = ("webhook", "config", "ping")
OUTCOMES: Final = ("delivered", "retry", "failed", "logged")

_attempts: dict[tuple[str, str], Count] = {}
_spreads: dict[tuple[str, str], Spread] = {}


def attempted(kind: str, outcome: str, seconds: float) -> None:
    """One attempt of a delivery to a `kind` of target, and what it came to."""
    if not metrics.on():
        return
    counter = _attempts.get((kind, outcome))
    if counter is None:
        counter = _attempts[(kind, outcome)] = buffer.count(WEBHOOK_ATTEMPTS.labels(kind, outcome))
    counter.inc()
    _spread("attempt", kind).observe(seconds)


def delivered(kind: str, seconds_since_event: float) -> None:
    """An event reached its receiver, `seconds_since_event` after the interaction ended."""
    if metrics.on():
        _spread("event", kind).observe(max(0.0, seconds_since_event))


def _spread(what: str, kind: str) -> Spread:
    found = _spreads.get((what, kind))
    if found is None:
        family = WEBHOOK_ATTEMPT_SECONDS if what == "attempt" else WEBHOOK_EVENT_SECONDS
        found = _spreads[(what, kind)] = buffer.spread(family.labels(kind))
    return found
