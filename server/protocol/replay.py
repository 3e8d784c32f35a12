"""The events of a finished interaction, rebuilt from its record once its log is gone (or when it never
had one): numbered `evr_<n>`, so a resume never mixes them up with a log's `evt_<n>` (pure)."""

from __future__ import annotations

import msgspec

from . import sse, views
from . import status as st
from .base import dec_hook, enc_hook
from .codec import json_encoder
from .content import TextContent
from .deltas import ArgumentsDelta, Delta, TextDelta, ThoughtSignatureDelta, ThoughtSummaryDelta
from .events import (
    ErrorEvent,
    Event,
    InteractionCompleted,
    InteractionCreated,
    InteractionStatusUpdate,
    StepDelta,
    StepStart,
    StepStop,
)
from .interaction import ErrorInfo
from .records import Record
from .steps import FunctionCallStep, ModelOutputStep, Step, ThoughtStep


def synthesize(record: Record) -> list[bytes]:
    """The events of a finished interaction, rebuilt from its record (numbered evr_1, evr_2, ...)."""
    interaction = views.from_record(record, full_timeline=False)
    events: list[Event] = [
        InteractionCreated(interaction=views.snapshot(record.id, record.config, record.created)),
        InteractionStatusUpdate(interaction_id=record.id, status=st.IN_PROGRESS),
    ]
    for index, step in enumerate(interaction.steps or []):
        events += _step_events(index, step)
    events.append(
        InteractionStatusUpdate(interaction_id=record.id, status=record.status, usage=interaction.usage)
    )
    if record.status == st.FAILED:
        errors = interaction.errors or [ErrorInfo(code="failed", message="The interaction failed")]
        events.append(ErrorEvent(error=errors[0]))
    else:
        events.append(InteractionCompleted(interaction=interaction))
    frames = []
    for seq, event in enumerate(events, start=1):
        event.event_id = sse.event_id(seq, sse.REBUILT)
        frames.append(sse.frame(event))
    return frames


def _step_events(index: int, step: Step) -> list[Event]:
    deltas: list[Delta] = []
    skeleton: Step = step
    if isinstance(step, ModelOutputStep):
        skeleton = ModelOutputStep(error=step.error)
        for item in step.content:
            if isinstance(item, TextContent):
                deltas.append(TextDelta(text=item.text))
            else:
                # a media item and its delta share `type` and fields
                deltas.append(
                    msgspec.convert(msgspec.to_builtins(item, enc_hook=enc_hook), Delta, dec_hook=dec_hook)
                )
    elif isinstance(step, ThoughtStep):
        skeleton = ThoughtStep()
        for item in step.summary or []:
            deltas.append(ThoughtSummaryDelta(content=item))
        if step.signature:
            deltas.append(ThoughtSignatureDelta(signature=step.signature))
    elif isinstance(step, FunctionCallStep):
        skeleton = FunctionCallStep(id=step.id, name=step.name, arguments={})
        deltas.append(ArgumentsDelta(arguments=json_encoder.encode(step.arguments).decode()))
    return [
        StepStart(index=index, step=skeleton),
        *(StepDelta(index=index, delta=delta) for delta in deltas),
        StepStop(index=index),
    ]
