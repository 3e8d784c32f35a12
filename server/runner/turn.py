"""Builds one turn's output from the upstream's normalised events (pure: no I/O).

For every upstream event it returns the API events to send (`step.start`, `step.delta`, `step.stop`,
numbered later) and keeps the output steps and usage, so a run that ends at any moment, even cancelled
mid-step, has the steps the client has seen.
"""

from __future__ import annotations

import msgspec

from ..protocol import deltas as d
from ..protocol import status as st
from ..protocol.content import AudioContent, DocumentContent, ImageContent, TextContent, VideoContent
from ..protocol.events import Event, StepDelta, StepStart, StepStop
from ..protocol.interaction import ErrorInfo, Usage
from ..protocol.steps import (
    FunctionCallStep,
    ModelOutputStep,
    Step,
    ThoughtStep,
)
from ..upstream import base as up

_MEDIA: dict[type, type] = {
    d.ImageDelta: ImageContent,
    d.AudioDelta: AudioContent,
    d.VideoDelta: VideoContent,
    d.DocumentDelta: DocumentContent,
}


class TurnBuilder:
    __slots__ = ("_args", "_open", "error", "status", "steps", "usage")

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.usage: Usage | None = None
        self.status: str | None = None
        self.error: ErrorInfo | None = None
        self._open = False
        self._args: list[str] = []

    def feed(self, event: up.UpstreamEvent) -> list[Event]:
        if isinstance(event, up.StepDelta):
            out: list[Event] = []
            if not self._open:
                out += self._start(_skeleton_for(event.delta))
            self._apply(event.delta)
            out.append(StepDelta(index=len(self.steps) - 1, delta=event.delta))
            return out
        if isinstance(event, up.StepStarted):
            return [*self.close_step(), *self._start(event.step)]
        if isinstance(event, up.StepEnded):
            return self.close_step()
        if isinstance(event, up.UsageReported):
            self.usage = event.usage
            return []
        self.status = event.status
        self.error = event.error
        return self.close_step()

    def close_step(self) -> list[Event]:
        """End the open step, if any (also used when a run stops mid-step)."""
        if not self._open:
            return []
        self._open = False
        step = self.steps[-1]
        if isinstance(step, FunctionCallStep) and self._args:
            step.arguments = _parse_arguments("".join(self._args))
            self._args = []
        return [StepStop(index=len(self.steps) - 1)]

    def final_status(self) -> str:
        if self.status is not None:
            return self.status
        return (
            st.REQUIRES_ACTION if any(isinstance(s, FunctionCallStep) for s in self.steps) else st.COMPLETED
        )

    def _start(self, skeleton: Step) -> list[Event]:
        self.steps.append(
            msgspec.structs.replace(skeleton) if isinstance(skeleton, msgspec.Struct) else skeleton
        )
        self._open = True
        return [StepStart(index=len(self.steps) - 1, step=skeleton)]

    def _apply(self, delta: d.Delta) -> None:
        step = self.steps[-1]
        if isinstance(delta, d.TextDelta) and isinstance(step, ModelOutputStep):
            content = step.content
            if content and isinstance(content[-1], TextContent):
                content[-1].text += delta.text
            else:
                step.content = [*content, TextContent(text=delta.text)]
        elif isinstance(delta, d.ArgumentsDelta):
            self._args.append(delta.arguments)
        elif isinstance(delta, d.ThoughtSummaryDelta) and isinstance(step, ThoughtStep):
            summary = step.summary or []
            if summary and isinstance(summary[-1], TextContent) and isinstance(delta.content, TextContent):
                summary[-1].text += delta.content.text
            else:
                summary.append(delta.content)
            step.summary = summary
        elif isinstance(delta, d.ThoughtSignatureDelta) and isinstance(step, ThoughtStep):
            step.signature = delta.signature
        elif isinstance(delta, d.TextAnnotationDelta) and isinstance(step, ModelOutputStep):
            if step.content and isinstance(step.content[-1], TextContent):
                text = step.content[-1]
                text.annotations = [*(text.annotations or []), *delta.annotations]
        elif type(delta) in _MEDIA and isinstance(step, ModelOutputStep):
            media = _MEDIA[type(delta)]
            names = [f.name for f in msgspec.structs.fields(media)]
            fields = {n: getattr(delta, n) for n in names if hasattr(delta, n)}
            step.content = [*step.content, media(**fields)]
        elif isinstance(delta, msgspec.Struct):
            # tool call / result deltas carry the step's own fields
            for name in delta.__struct_fields__:
                value = getattr(delta, name)
                if value is not None and name in getattr(step, "__struct_fields__", ()):
                    setattr(step, name, value)


def _skeleton_for(delta: d.Delta) -> Step:
    if isinstance(delta, (d.ThoughtSummaryDelta, d.ThoughtSignatureDelta)):
        return ThoughtStep()
    return ModelOutputStep()


def _parse_arguments(text: str) -> dict[str, object]:
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return {"_raw": text}
    return value if isinstance(value, dict) else {"value": value}
