"""Builds one turn's output from the upstream's normalised events (pure: no I/O).

For every upstream event it returns the API events to send (`step.start`, `step.delta`, `step.stop`,
numbered later) and keeps the output steps and usage, so a run that ends at any moment, even cancelled
mid-step, has the steps the client has seen.
"""

from __future__ import annotations

import msgspec

from ..protocol import deltas as d
from ..protocol import status as st
from ..protocol.content import (
    AudioContent,
    Content,
    DocumentContent,
    ImageContent,
    TextContent,
    VideoContent,
)
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
    __slots__ = ("_args", "_item", "_open", "_steps", "_summary", "_text", "error", "status", "usage")

    def __init__(self) -> None:
        self._steps: list[Step] = []
        self.usage: Usage | None = None
        self.status: str | None = None
        self.error: ErrorInfo | None = None
        self._open = False
        self._args: list[str] = []
        # the fragments of the text item being written (`_item`), of a model_output (`_text`) or of a
        # thought's summary (`_summary`): joined once, when something reads the steps or the item is done,
        # since adding each fragment to a str would copy the whole text each time
        self._item: TextContent | None = None
        self._text: list[str] | None = None
        self._summary: list[str] | None = None

    @property
    def steps(self) -> list[Step]:
        """The output steps so far, their text complete."""
        self._join_text()
        return self._steps

    def feed(self, event: up.UpstreamEvent) -> list[Event]:
        if isinstance(event, up.StepDelta):
            delta = event.delta
            out: list[Event] = []
            if not self._open:
                out += self._start(_skeleton_for(delta))
            text = self._text
            # the common case, one more fragment of the open model_output's text, with no call
            if text is not None and isinstance(delta, d.TextDelta):
                text.append(delta.text)
            else:
                self._apply(delta)
            out.append(StepDelta(index=len(self._steps) - 1, delta=delta))
            return out
        if isinstance(event, up.StepStarted):
            return [*self.close_step(), *self._start(event.step)]
        if isinstance(event, up.StepEnded):
            return self.close_step()
        if isinstance(event, up.UsageReported):
            self.usage = event.usage
            return []
        if isinstance(event, up.RemoteStarted):
            return []  # the runner's to record (run.py)
        self.status = event.status
        self.error = event.error
        return self.close_step()

    def close_step(self) -> list[Event]:
        """End the open step, if any (also used when a run stops mid-step)."""
        if not self._open:
            return []
        self._join_text()
        self._open = False
        step = self._steps[-1]
        if isinstance(step, FunctionCallStep) and self._args:
            step.arguments = _parse_arguments("".join(self._args))
            self._args = []
        return [StepStop(index=len(self._steps) - 1)]

    def final_status(self) -> str:
        if self.status is not None:
            return self.status
        return (
            st.REQUIRES_ACTION if any(isinstance(s, FunctionCallStep) for s in self._steps) else st.COMPLETED
        )

    def _start(self, skeleton: Step) -> list[Event]:
        self._steps.append(
            msgspec.structs.replace(skeleton) if isinstance(skeleton, msgspec.Struct) else skeleton
        )
        self._open = True
        return [StepStart(index=len(self._steps) - 1, step=skeleton)]

    def _join_text(self) -> None:
        fragments = self._text if self._text is not None else self._summary
        if self._item is not None and fragments is not None:
            self._item.text = "".join(fragments)
        self._item = self._text = self._summary = None

    def _add_summary(self, step: ThoughtStep, content: Content) -> None:
        if self._summary is not None and isinstance(content, TextContent):
            self._summary.append(content.text)
            return
        self._join_text()
        summary = step.summary or []
        step.summary = summary
        if summary and isinstance(summary[-1], TextContent) and isinstance(content, TextContent):
            self._item = summary[-1]
            self._summary = [self._item.text, content.text]
        else:
            summary.append(content)

    def _apply(self, delta: d.Delta) -> None:
        step = self._steps[-1]
        if isinstance(delta, d.ThoughtSummaryDelta) and isinstance(step, ThoughtStep):
            self._add_summary(step, delta.content)
            return
        # any other delta may read or add content: the text written so far goes in first
        self._join_text()
        if isinstance(delta, d.TextDelta) and isinstance(step, ModelOutputStep):
            content = step.content
            if content and isinstance(content[-1], TextContent):
                self._item = content[-1]
                self._text = [self._item.text, delta.text]
            else:
                self._item = TextContent(text="")
                self._text = [delta.text]
                step.content = [*content, self._item]
        elif isinstance(delta, d.ArgumentsDelta):
            self._args.append(delta.arguments)
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
