"""The Responses API's streaming grammar, the one place it lives: our event log's frames (protocol/sse.py:
the log's, a live run's, or those rebuilt from a finished record by protocol/replay.py) rendered as
Responses events (stream_wire.py), pure.

    interaction.created            response.created (+ response.queued, for a background response)
    status_update in_progress      response.in_progress (once: a re-run of a lost run says it again)
    step.start (a step with an     response.output_item.added (its item in_progress; a function call's
      item, encode.output_item)      arguments empty: they come as deltas)
    step.delta text                [response.content_part.added] response.output_text.delta
    step.delta arguments_delta     response.function_call_arguments.delta
    step.delta thought_summary     [response.reasoning_summary_part.added]
                                   response.reasoning_summary_text.delta
    step.stop                      the open part's .done events, response.function_call_arguments.done,
                                   response.output_item.done (its item completed)
    interaction.completed          response.completed, or response.incomplete (incomplete, cancelled:
                                   OpenAI's stream has no cancelled event), with the whole Response
    error, after a failed status   response.failed (the Response as the stream made it, and its error)
    any other error                error (Redis away, a lost run, a gone log: not the log's own)

A step with no Responses item (a tool's result, Google's built-in tools) streams no events. Keep-alive
comments pass through; the stream ends with `data: [DONE]` (the openai SDKs stop reading there).

Numbering: every event rendered gets the next `sequence_number`, from 0 at the start of the log, so the
numbers are a function of the log alone, the same in every web process: a resume (`starting_after=N`)
renders the log from its start and drops every event numbered N or less. An `error` that is not the log's
takes no number of its own: it carries the last one the client has, so a resume after it loses nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import msgspec

from ...protocol import sse
from ...protocol import status as st
from ...protocol.deltas import Delta, ThoughtSummaryDelta
from ...protocol.events import (
    AnyEvent,
    ErrorEvent,
    InteractionCompleted,
    InteractionCreated,
    InteractionStatusUpdate,
    StepDelta,
    StepStart,
    StepStop,
)
from ...protocol.interaction import ErrorInfo, Interaction, InteractionConfig
from ...protocol.steps import FunctionCallStep, ModelOutputStep, Step, ThoughtStep
from . import encode, wire
from . import stream_wire as ev
from . import text_runs as runs
from .open_item import OpenItem, empty_step, padding
from .stream_wire import TEXT_HEAD, TEXT_TAIL

DONE = b"data: [DONE]\n\n"
_text = msgspec.json.Decoder(str)
_TERMINAL_EVENTS: dict[str, type[ev.Completed | ev.Failed]] = {"completed": ev.Completed, "failed": ev.Failed}


class Renderer:
    """One stream's grammar state. `after`: drop the events numbered up to it (starting_after);
    `background`: the response runs in the background (its record says; the log does not); `config`: what
    the request configured, echoed by the first events (the log's `interaction.created` holds only the
    model); `obfuscate`: pad the delta events (include_obfuscation)."""

    def __init__(
        self,
        *,
        after: int | None = None,
        background: bool = False,
        config: InteractionConfig | None = None,
        obfuscate: bool = False,
    ) -> None:
        self.after = -1 if after is None else after
        self.background = background
        self.config = config
        self.obfuscate = obfuscate
        #: the number of the last event rendered (kept or dropped); the end has been rendered
        self.seq, self.ended = -1, False
        self._out: list[bytes] = []
        self._start: Interaction | None = None
        self._in_progress = False
        self._open: OpenItem | None = None
        self._items = 0
        self._steps: list[Step] = []
        #: the end's status update (its status and usage), once it came
        self._update: InteractionStatusUpdate | None = None

    @property
    def interaction_id(self) -> str:
        return self._start.id or "" if self._start else ""

    def feed(self, chunk: bytes) -> bytes:
        """The Responses frames of a chunk of our frames (whole frames, as the log and the relay yield):
        its run of text deltas framed at once where it can be (text_runs.py), the rest frame by frame."""
        out = self._out = []
        opened = self._open
        span = runs.span(chunk, opened is not None and opened.text_fields is not None)
        if span is None:
            self._frames(chunk)
            return b"".join(out)
        start, end = span
        if start:
            self._frames(chunk[:start])
        run = chunk[start:end] if start or end < len(chunk) else chunk
        if not self._text_run(run):
            self._frames(run)
        if end < len(chunk):
            self._frames(chunk[end:])
        return out[0] if len(out) == 1 else b"".join(out)

    def _text_run(self, run: bytes) -> bool:
        """Frames from a text delta to a text delta framed at once (text_runs.py), when the open part has
        an item and nothing is dropped or padded; False, with nothing done: frame them one by one."""
        opened, first = self._open, self.seq + 1
        fields = opened.text_fields if opened is not None else None
        if opened is None or fields is None or self.ended or self.obfuscate or first <= self.after:
            return False
        framed = runs.frame_run(run, opened.index, fields, first)
        if framed is None:
            return False
        opened.raws += framed.texts
        self.seq += framed.count
        self._out.append(framed.frames)
        return True

    def _frames(self, chunk: bytes) -> None:
        """Whole frames, one by one."""
        out, decode, after, obfuscate = self._out, ev.pieces.decode, self.after, self.obfuscate
        for part in chunk.split(b"\n\n"):
            if part.startswith(runs.DELTA_FRAME):
                if self.ended:
                    continue
                piece = decode(part[runs.DATA_AT :])  # read without the open unions' hook
                delta, opened = piece.delta, self._open
                if (
                    delta.type == "text"
                    and opened is not None
                    and opened.text_fields is not None
                    and opened.index == piece.index
                    and len(delta.text)
                    and not obfuscate
                ):
                    # one more fragment of an open text part: framed from its bytes, in line
                    opened.raws += delta.text
                    opened.raws += b","
                    seq = self.seq = self.seq + 1
                    if seq > after:
                        out += (TEXT_HEAD, b"%d" % seq, opened.text_fields, delta.text, TEXT_TAIL)
                elif not self._piece(piece):
                    self._event(sse.parse(part))
            elif part[:1] == b":":
                out.append(part + b"\n\n")
            elif part and not self.ended:
                self._event(sse.parse(part))

    def _piece(self, piece: ev.PieceFrame) -> bool:
        """Any other text or arguments delta (False: another kind of delta)."""
        delta, opened = piece.delta, self._open
        if delta.type == "text" and len(delta.text):
            if opened is not None and opened.index == piece.index:
                opened.text(_text.decode(delta.text))
            return True
        if delta.type == "arguments_delta" and delta.arguments is not None:
            self._arguments(piece.index, delta.arguments)
            return True
        return False

    def _event(self, event: AnyEvent) -> None:
        if isinstance(event, StepDelta):
            self._delta(event.index, event.delta)
        elif isinstance(event, StepStart):
            self._step_start(event.index, event.step)
        elif isinstance(event, StepStop):
            self._step_stop(event.index, "completed")
        elif isinstance(event, InteractionStatusUpdate):
            self._status_update(event)
        elif isinstance(event, InteractionCreated):
            self._created(event.interaction)
        elif isinstance(event, InteractionCompleted):
            self._completed(event.interaction)
        elif isinstance(event, ErrorEvent):
            self._error(event.error)

    def _emit(self, event: ev.StreamEvent) -> None:
        self.seq += 1
        if self.seq <= self.after:
            return
        event.sequence_number = self.seq
        if self.obfuscate and isinstance(event, ev.DELTAS):
            event.obfuscation = padding(len(event.delta))
        self._out.append(ev.frame(event))

    # -- the response ------------------------------------------------------------------------------------

    def _created(self, snapshot: Interaction) -> None:
        start = self._start = encode.configured(snapshot, self.config)
        if self.background:
            queued = msgspec.structs.replace(start, status=st.QUEUED)
            self._emit(ev.Created(sequence_number=0, response=self._response(queued)))
            self._emit(ev.Queued(sequence_number=0, response=self._response(queued)))
        else:
            self._emit(ev.Created(sequence_number=0, response=self._response(start)))

    def _status_update(self, update: InteractionStatusUpdate) -> None:
        if update.status != st.IN_PROGRESS:
            self._update = update  # the terminal event that follows says it
            return
        if not self._in_progress:
            self._in_progress = True
            start = self._begin(None, update.interaction_id)
            self._emit(ev.InProgress(sequence_number=0, response=self._response(start)))

    def _begin(self, seed: Interaction | None, interaction_id: str) -> Interaction:
        """The response's start; for a log that ends before any run began it (cancelled or failed while
        queued: its end alone is in the log), `response.created` from its end, or the stored response."""
        if self._start is None:
            if seed is None:
                seed = self.config if isinstance(self.config, Interaction) else encode.bare(interaction_id)
            self._created(msgspec.structs.replace(seed, status=st.IN_PROGRESS, steps=None, usage=None))
        assert self._start is not None
        return self._start

    def _completed(self, interaction: Interaction) -> None:
        self._begin(interaction, interaction.id or "")
        self._close_open()
        response = self._response(interaction)
        kind = _TERMINAL_EVENTS.get(response.status, ev.Incomplete)
        self._emit(kind(sequence_number=0, response=response))
        self.ended = True

    def _error(self, error: ErrorInfo) -> None:
        self._close_open()
        self.ended = True
        if self._update is not None and self._update.status == st.FAILED:
            # the log's own end of a failed run: the Response as streamed, failed with this error
            end = self._update
            start = self._begin(None, end.interaction_id)
            failed = msgspec.structs.replace(start, status=st.FAILED, steps=self._steps, usage=end.usage)
            failed.errors = [error]
            self._emit(ev.Failed(sequence_number=0, response=self._response(failed)))
            return
        payload = ev.ErrorPayload(type="server_error", code=error.code, message=error.message, param=None)
        shown = max(self.seq, self.after, 0)
        event = ev.Error(
            sequence_number=shown, code=error.code, message=error.message, param=None, error=payload
        )
        self._out.append(ev.frame(event))

    def _response(self, interaction: Interaction) -> wire.Response:
        return encode.response(interaction, background=self.background)

    # -- the items ---------------------------------------------------------------------------------------

    def _step_start(self, index: int, step: Step) -> None:
        self._close_open()
        empty = empty_step(step)
        item = encode.output_item(self.interaction_id, index, empty, "in_progress")
        opened = self._open = OpenItem(self._emit, index, item, self._items, empty)
        if item is not None:
            if isinstance(item, (wire.FunctionCall, wire.McpCall)):
                item.arguments = ""
            self._emit(ev.ItemAdded(sequence_number=0, output_index=self._items, item=item))
            self._items += 1
        # what the start already holds streams as if it came in deltas
        if isinstance(step, ModelOutputStep):
            for content in step.content:
                opened.content(content)
        elif isinstance(step, ThoughtStep):
            for content in step.summary or step.content or []:
                opened.summary(content)
            if isinstance(empty, ThoughtStep):
                empty.signature = step.signature
        elif isinstance(step, FunctionCallStep) and step.arguments:
            self._arguments(index, encode.arguments_text(step.arguments))

    def _step_stop(self, index: int, status: str) -> None:
        opened = self._open
        if opened is None or opened.index != index:
            return
        self._open = None
        opened.close(self.interaction_id, status)
        self._steps.append(opened.step)

    def _close_open(self) -> None:
        """A step still open at the end (its run was lost mid-step) ends incomplete."""
        if self._open is not None:
            self._step_stop(self._open.index, "incomplete")

    def _arguments(self, index: int, arguments: str) -> None:
        opened = self._open
        if opened is not None and opened.index == index:
            opened.arguments(arguments)

    def _delta(self, index: int, delta: Delta) -> None:
        opened = self._open
        if opened is None or opened.index != index:
            return
        if isinstance(delta, ThoughtSummaryDelta):
            opened.summary(delta.content)
        else:
            # a signature, a tool's fields, media: into the step, as the runner puts them there
            opened.other(delta)


async def render(frames: AsyncIterator[bytes], renderer: Renderer) -> AsyncIterator[bytes]:
    """A stream of our frames as a Responses stream, ended by `data: [DONE]`."""
    try:
        async for chunk in frames:
            if out := renderer.feed(chunk):
                yield out
        yield DONE
    finally:
        # closed now (a relay stops its run when its client goes: runner/replies.py)
        if (aclose := getattr(frames, "aclose", None)) is not None:
            await aclose()
