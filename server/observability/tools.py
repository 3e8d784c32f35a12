"""The metrics hooks of the tools the server runs itself (families.py names them)."""

from __future__ import annotations

from typing import Final

from . import buffer, metrics
from .buffer import Count
from .families import TOOL_CALL_SECONDS, TOOL_CALLS

OUTCOMES: Final = ("ok", "error", "out_of_time")

_calls: dict[str, Count] = {}
_seconds = buffer.spread(TOOL_CALL_SECONDS)


def called(outcome: str, seconds: float) -> None:
    """One MCP tool call of a run, and how it ended."""
    if not metrics.on():
        return
    counter = _calls.get(outcome)
    if counter is None:
        counter = _calls[outcome] = buffer.count(TOOL_CALLS.labels(outcome))
    counter.inc()
    _seconds.observe(seconds)
