"""A run's tokens, counted as it goes against what its tenant's token limits left it when it started (pure).

The count is the upstream's own where it reports usage during the run (cumulative: Gemini, Google's
Interactions API and the echo models report it as they go), and beyond its last report an estimate of
4 characters a token of what the run streamed since; before any report, the input's estimate (the text
of its history, 4 characters a token; its images and files are left out) stands for it. A run whose
count reaches its budget is stopped (runner/run.py), `budget_exceeded`, and keeps the usage counted so
far (`usage`), which its settle adds to its tenant's totals: a cut run never counts as nothing, whether
its budget, a cancel or a failure cut it (`counted`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

import msgspec

from ..protocol import deltas as d
from ..protocol.interaction import ErrorInfo, Usage
from ..upstream.base import StepDelta, UpstreamEvent, UpstreamRequest, UsageReported

#: characters a token, for an estimate (the usual rule of thumb for English text)
CHARS_PER_TOKEN: Final = 4
BUDGET_EXCEEDED_CODE: Final = "budget_exceeded"


def _reported(usage: Usage) -> int:
    if usage.total_tokens is not None:
        return usage.total_tokens
    return sum(
        n or 0 for n in (usage.total_input_tokens, usage.total_output_tokens, usage.total_thought_tokens)
    )


def _characters(delta: d.Delta) -> int:
    if isinstance(delta, d.TextDelta):
        return len(delta.text)
    if isinstance(delta, d.ArgumentsDelta):
        return len(delta.arguments)
    if isinstance(delta, d.ThoughtSummaryDelta):
        return len(getattr(delta.content, "text", "") or "")
    return 0


def _text_length(steps: Sequence[object]) -> int:
    """The characters of the text parts of a history's steps (its other parts are left out)."""
    total = 0
    for step in steps:
        for part in getattr(step, "content", None) or ():
            text = getattr(part, "text", None)
            if isinstance(text, str):
                total += len(text)
    return total


class Meter:
    __slots__ = ("budget", "characters", "input_estimate", "reported", "room")

    def __init__(self, budget: int, request: UpstreamRequest) -> None:
        self.budget = budget
        self.input_estimate = math.ceil(_text_length(request.history) / CHARS_PER_TOKEN)
        #: the upstream's last report (None: none yet)
        self.reported: int | None = None
        #: characters streamed since that report
        self.characters = 0
        #: the characters that may stream before the budget is used up: a delta costs a subtraction and a
        #: comparison (streams are hot), not the count's arithmetic
        self.room = self._room()

    def _room(self) -> int:
        base = self.input_estimate if self.reported is None else self.reported
        # used = base + ceil(characters / 4) reaches the budget once characters > 4 x (budget - base - 1)
        return CHARS_PER_TOKEN * (self.budget - base - 1) + 1

    @property
    def used(self) -> int:
        base = self.input_estimate if self.reported is None else self.reported
        return base + math.ceil(self.characters / CHARS_PER_TOKEN)

    def exhausted(self) -> bool:
        return self.characters >= self.room

    def feed(self, event: UpstreamEvent) -> bool:
        """Count `event`; whether the budget is now used up."""
        if type(event) is StepDelta:
            delta = event.delta
            self.characters += len(delta.text) if type(delta) is d.TextDelta else _characters(delta)
        elif isinstance(event, UsageReported):
            self.reported, self.characters = _reported(event.usage), 0
            self.room = self._room()
        else:
            return False
        return self.characters >= self.room

    def counted(self, reported: Usage | None, *, cut: bool) -> Usage:
        """What a run that made output counts as it ends: the upstream's own report where the upstream
        ended it (that report is whole), else (`cut` short by its budget, a cancel or a failure, or no
        report at all) the report with the estimate of what streamed since, so that ending a run early
        never spends less of a token limit than the run used."""
        if reported is not None and not cut:
            return reported
        return self.usage(reported)

    def usage(self, reported: Usage | None) -> Usage:
        """The stopped run's usage: the upstream's last report with the estimate of what it streamed since
        added to its output, or else the estimates alone."""
        since = math.ceil(self.characters / CHARS_PER_TOKEN)
        if reported is None:
            return Usage(
                total_input_tokens=self.input_estimate,
                total_output_tokens=since,
                total_tokens=self.input_estimate + since,
            )
        if not since:
            return reported
        return msgspec.structs.replace(
            reported,
            total_output_tokens=(reported.total_output_tokens or 0) + since,
            total_tokens=_reported(reported) + since,
        )

    def error(self) -> ErrorInfo:
        return ErrorInfo(
            code=BUDGET_EXCEEDED_CODE,
            message=(
                f"This API key's token limit was reached during the run ({self.budget} tokens were left "
                "when it started); the output made until then is kept"
            ),
        )
