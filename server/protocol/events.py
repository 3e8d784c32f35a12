"""Server-sent events of a stream (spec §9.3). `event_id` is filled when the event is numbered."""

from __future__ import annotations

from typing import Any

from .base import Wire
from .deltas import Delta
from .interaction import ErrorInfo, Interaction, Usage
from .lifecycle import wire_status
from .steps import Step


class Event(Wire, tag_field="event_type"):
    event_id: str | None = None


class InteractionCreated(Event, tag="interaction.created", kw_only=True):
    interaction: Interaction


class InteractionStatusUpdate(Event, tag="interaction.status_update", kw_only=True):
    interaction_id: str
    status: str
    usage: Usage | None = None

    def __post_init__(self) -> None:
        # made from a state by the runner, the settle or a replay: each shows it as clients see it
        self.status = wire_status(self.status)


class StepStart(Event, tag="step.start", kw_only=True):
    index: int
    step: Step


class StepDelta(Event, tag="step.delta", kw_only=True):
    index: int
    delta: Delta
    metadata: dict[str, Any] | None = None


class StepStop(Event, tag="step.stop", kw_only=True):
    index: int
    usage: Usage | None = None


class InteractionCompleted(Event, tag="interaction.completed", kw_only=True):
    interaction: Interaction


class ErrorEvent(Event, tag="error", kw_only=True):
    error: ErrorInfo


AnyEvent = (
    InteractionCreated
    | InteractionStatusUpdate
    | StepStart
    | StepDelta
    | StepStop
    | InteractionCompleted
    | ErrorEvent
)
