"""The step a Responses stream is streaming (events.py): its item's events, and the step as its deltas
make it, for its item's `done` event (encode.output_item) and a failed Response's output. Its fragments
are joined once, when a part or the step ends, as the runner's TurnBuilder joins them."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

import msgspec

from ...protocol.base import dec_hook, enc_hook
from ...protocol.content import Content, TextContent
from ...protocol.deltas import ArgumentsDelta, Delta, TextAnnotationDelta
from ...protocol.steps import FunctionCallStep, ModelOutputStep, Step, ThoughtStep
from . import encode, wire
from . import stream_wire as ev

Emit = Callable[[ev.StreamEvent], None]
#: the deltas that carry a media part of a model's output (a delta and its content share type and fields)
_MEDIA = ("image", "audio", "video", "document")
_json = msgspec.json.Encoder()
_texts = msgspec.json.Decoder(list[str])


class OpenItem:
    __slots__ = (
        "annotations",
        "args",
        "emit",
        "fragments",
        "index",
        "item",
        "output_index",
        "part",
        "parts",
        "raws",
        "step",
        "text_fields",
    )

    def __init__(
        self, emit: Emit, index: int, item: wire.OutputItem | None, output_index: int, step: Step
    ) -> None:
        self.emit = emit
        #: the step's index among the output steps (its item's id says it)
        self.index = index
        self.item = item
        #: the item's place in the Response's output
        self.output_index = output_index
        self.step = step
        #: the open part (content or summary index), the parts opened so far, the open part's fragments
        self.part: int | None = None
        self.parts = 0
        self.fragments: list[str] = []
        #: the open text part's fragments, as JSON (events.py frames them as they come)
        #: (in one buffer, each followed by a comma: the frames they were cut from need not be kept)
        self.raws = bytearray()
        #: the open text part's fields in its delta frames (stream_wire.text_fields), when it has an item
        self.text_fields: bytes | None = None
        self.annotations: list[dict[str, Any]] = []
        self.args: list[str] = []

    @property
    def item_id(self) -> str:
        return self.item.id if self.item is not None else ""

    def text(self, text: str) -> None:
        if not isinstance(self.step, ModelOutputStep):
            return
        if self.part is None:
            self._open_part(
                ev.PartAdded(
                    sequence_number=0,
                    item_id=self.item_id,
                    output_index=self.output_index,
                    content_index=self.parts,
                    part=wire.OutputText(text="", annotations=[]),
                )
            )
            if self.item is not None:
                self.text_fields = ev.text_fields(self.item.id, self.output_index, self.parts - 1)
        self.raws += _json.encode(text)
        self.raws += b","
        if self.item is not None:
            self.emit(
                ev.TextDelta(
                    sequence_number=0,
                    item_id=self.item.id,
                    output_index=self.output_index,
                    content_index=self.parts - 1,
                    delta=text,
                    logprobs=[],
                )
            )

    def content(self, content: Content) -> None:
        """A part the step started with, streamed as if it came in a delta."""
        if isinstance(content, TextContent):
            self.text(content.text)
        else:
            self.other(
                msgspec.convert(msgspec.to_builtins(content, enc_hook=enc_hook), Delta, dec_hook=dec_hook)
            )

    def arguments(self, arguments: str) -> None:
        if not isinstance(self.step, FunctionCallStep):
            return
        self.args.append(arguments)
        if self.item is not None:
            self.emit(
                ev.ArgumentsDelta(
                    sequence_number=0, item_id=self.item.id, output_index=self.output_index, delta=arguments
                )
            )

    def summary(self, content: Content) -> None:
        step = self.step
        if not isinstance(step, ThoughtStep):
            return
        if not isinstance(content, TextContent):
            self.close_part()
            step.summary = [*(step.summary or []), content]
            return
        if self.part is None:
            self._open_part(
                ev.SummaryPartAdded(
                    sequence_number=0,
                    item_id=self.item_id,
                    output_index=self.output_index,
                    summary_index=self.parts,
                    part=wire.SummaryText(text=""),
                )
            )
        self.fragments.append(content.text)
        if self.item is not None:
            self.emit(
                ev.SummaryDelta(
                    sequence_number=0,
                    item_id=self.item.id,
                    output_index=self.output_index,
                    summary_index=self.parts - 1,
                    delta=content.text,
                )
            )

    def other(self, delta: Delta) -> None:
        """Any other delta: no event of its own; it goes into the step, as the runner puts it there."""
        step = self.step
        if isinstance(delta, ArgumentsDelta):
            self.arguments(delta.arguments)
        elif isinstance(delta, TextAnnotationDelta) and isinstance(step, ModelOutputStep):
            self._annotate(step, delta.annotations)
        elif isinstance(step, ModelOutputStep) and getattr(delta, "type", None) in _MEDIA:
            # a media part (no Responses form: encode leaves it out) ends the text part before it
            self.close_part()
            content = msgspec.convert(
                msgspec.to_builtins(delta, enc_hook=enc_hook), Content, dec_hook=dec_hook
            )
            step.content = [*step.content, content]
        elif isinstance(delta, msgspec.Struct):
            for name in delta.__struct_fields__:
                value = getattr(delta, name)
                if value is not None and name in getattr(step, "__struct_fields__", ()):
                    setattr(step, name, value)

    def close(self, interaction_id: str, status: str) -> None:
        """The step ends (`status`: its item's, `completed`, or `incomplete` when its run ended mid-step)."""
        self.close_part()
        step = self.step
        if isinstance(step, FunctionCallStep):
            if not self.args:
                # a call that came whole, or without arguments: its arguments still stream, in one delta
                self.arguments(encode.arguments_text(step.arguments))
            text = "".join(self.args)
            step.arguments = _parse_arguments(text)
            if self.item is not None:
                self.emit(
                    ev.ArgumentsDone(
                        sequence_number=0,
                        item_id=self.item.id,
                        output_index=self.output_index,
                        arguments=text,
                    )
                )
        if self.item is not None:
            item = encode.output_item(interaction_id, self.index, step, status)
            if item is not None:
                self.emit(ev.ItemDone(sequence_number=0, output_index=self.output_index, item=item))

    def close_part(self) -> None:
        part = self.part
        if part is None:
            return
        step = self.step
        if isinstance(step, ModelOutputStep):
            text = "".join(_texts.decode(b"[%s]" % self.raws[:-1]))
            self.part, self.raws, self.text_fields = None, bytearray(), None
            content = TextContent(text=text)
            if self.annotations:
                content.annotations, self.annotations = self.annotations, []
            step.content = [*step.content, content]
            if self.item is not None:
                shown = wire.OutputText(text=text, annotations=[])
                self.emit(
                    ev.TextDone(
                        sequence_number=0,
                        item_id=self.item.id,
                        output_index=self.output_index,
                        content_index=part,
                        text=text,
                    )
                )
                self.emit(
                    ev.PartDone(
                        sequence_number=0,
                        item_id=self.item.id,
                        output_index=self.output_index,
                        content_index=part,
                        part=shown,
                    )
                )
        elif isinstance(step, ThoughtStep):
            text = "".join(self.fragments)
            self.part, self.fragments = None, []
            step.summary = [*(step.summary or []), TextContent(text=text)]
            if self.item is not None:
                self.emit(
                    ev.SummaryDone(
                        sequence_number=0,
                        item_id=self.item.id,
                        output_index=self.output_index,
                        summary_index=part,
                        text=text,
                    )
                )
                self.emit(
                    ev.SummaryPartDone(
                        sequence_number=0,
                        item_id=self.item.id,
                        output_index=self.output_index,
                        summary_index=part,
                        part=wire.SummaryText(text=text),
                    )
                )

    def _open_part(self, event: ev.StreamEvent) -> None:
        self.part = self.parts
        self.parts += 1
        if self.item is not None:
            self.emit(event)

    def _annotate(self, step: ModelOutputStep, annotations: list[dict[str, Any]]) -> None:
        if self.part is not None:
            self.annotations += annotations
        elif step.content and isinstance(last := step.content[-1], TextContent):
            last.annotations = [*(last.annotations or []), *annotations]


def _parse_arguments(text: str) -> dict[str, Any]:
    """As the runner reads a call's arguments (runner/turn.py): an object, else kept under a key."""
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return {"_raw": text}
    return value if isinstance(value, dict) else {"value": value}


def empty_step(step: Step) -> Step:
    """A step as it starts, before its deltas: they fill it (the rest of a start is streamed as deltas)."""
    if isinstance(step, ModelOutputStep):
        return ModelOutputStep(error=step.error)
    if isinstance(step, ThoughtStep):
        return ThoughtStep()
    if isinstance(step, FunctionCallStep):
        return FunctionCallStep(id=step.id, name=step.name, arguments={})
    return msgspec.structs.replace(step) if isinstance(step, msgspec.Struct) else step


def padding(length: int) -> str:
    """Random characters that bring a delta's payload to a multiple of 16 characters (at least one)."""
    return secrets.token_urlsafe(16)[: 16 - length % 16]
