"""What an interaction's event log says its output was: the steps and usage its followers assembled.

A run whose process was lost never wrote its output; its log holds what its clients saw. Folding the log's
events through the same TurnBuilder that built them gives the record the same output, so a follower, a
resume, a replay and a get agree.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from ..protocol.base import dec_hook
from ..protocol.events import AnyEvent, InteractionStatusUpdate, StepDelta, StepStart, StepStop
from ..protocol.interaction import Usage
from ..protocol.steps import Step
from ..upstream import base as up
from .turn import TurnBuilder

_decoder = msgspec.json.Decoder(AnyEvent, dec_hook=dec_hook)
_STEP_EVENTS = (b"event: step.",)


def output_of(frames: Iterable[bytes]) -> tuple[list[Step], Usage | None]:
    turn = TurnBuilder()
    usage: Usage | None = None
    for frame in frames:
        event = _decoder.decode(_data_of(frame))
        if isinstance(event, StepStart):
            turn.feed(up.StepStarted(step=event.step))
        elif isinstance(event, StepDelta):
            turn.feed(up.StepDelta(delta=event.delta))
        elif isinstance(event, StepStop):
            turn.feed(up.StepEnded())
        elif isinstance(event, InteractionStatusUpdate) and event.usage is not None:
            usage = event.usage
    turn.close_step()
    return turn.steps, usage


def has_output(frames: Iterable[bytes]) -> bool:
    """Whether any step (output a client may have seen) is in these frames."""
    return any(frame.startswith(_STEP_EVENTS) for frame in frames)


def step_events(frames: Iterable[bytes]) -> int:
    """How many step events (step.start, step.delta, step.stop) these frames hold."""
    return sum(1 for frame in frames if frame.startswith(_STEP_EVENTS))


def _data_of(frame: bytes) -> bytes:
    _event, _, data = frame.partition(b"\ndata: ")
    return data.rstrip(b"\n")
