"""The event stream of Google's Interactions API -> normalised events.

Its grammar is this server's own (`step.start`, `step.delta`, `step.stop`, then `interaction.completed` or
`error`), so a step goes on as it came: a built-in tool's call and result (`google_search_call`, ...) keep
their own step types, and the runner rebuilds the output exactly as Google streamed it. Two things change
on the way: Google's signatures (of thoughts, and of built-in tool steps) are sealed with this backend's
name (upstream/native.py), so that they only ever go back to it, and a function call whose arguments came
whole in its `step.start` is given them as one fragment, as the runner reads arguments. Event types newer
than this server are skipped.
"""

from __future__ import annotations

from typing import Final, TypeVar

import msgspec

from ...protocol import deltas as d
from ...protocol import events as ev
from ...protocol import status as st
from ...protocol.base import dec_hook
from ...protocol.content import text_of
from ...protocol.interaction import ErrorInfo, Interaction
from ...protocol.steps import FunctionCallStep, FunctionResultStep, ModelOutputStep, Step, UserInputStep
from .. import base as up
from .. import native
from ..emit import to_json
from ..sse import SSEDecoder, SSEMessage
from ..stream import Events, JsonStreamDecoder
from .kind import KIND

S = TypeVar("S", Step, d.Delta)
_events = msgspec.json.Decoder(ev.AnyEvent, dec_hook=dec_hook)
_KNOWN: Final = frozenset(str(t.__struct_config__.tag) for t in ev.AnyEvent.__args__)
#: the ends a model turn can have here
_ENDS: Final = frozenset({st.COMPLETED, st.REQUIRES_ACTION, st.INCOMPLETE, st.FAILED})
#: the ends only the upstream's own run can have (someone cancelled it at Google, its budget ran out): a
#: failure here, and an end: following the run again would only read it again
_ENDED_THERE: Final = st.TERMINAL - _ENDS
#: gRPC-style codes of an `error` event -> the HTTP status they stand for (retries read it)
_CODES: Final = {
    "invalid_argument": 400,
    "unauthenticated": 401,
    "permission_denied": 403,
    "not_found": 404,
    "resource_exhausted": 429,
    "internal": 500,
    "unavailable": 503,
    "deadline_exceeded": 504,
}


class InteractionsDecoder(JsonStreamDecoder[ev.AnyEvent]):
    unit = "event"

    def __init__(self, backend: str = KIND, *, remote: bool = False) -> None:
        """`remote`: a remote run's, which may be polled to its end: the open step's text is kept, so that a
        poll can finish the step a cut stream left half-written."""
        super().__init__(backend, _events)
        self._remote = remote
        #: the text streamed of the open model_output step (a remote run's only)
        self._open_text: list[str] | None = None
        #: the remote interaction's id, from its `interaction.created`
        self.remote_id: str | None = None
        #: the id of the last event read: a stream cut short is taken up after it (`last_event_id`)
        self.last_event_id: str | None = None
        #: the steps started so far (a poll's answer shows the whole interaction: these are shown already)
        self.started = 0
        self._end: up.Finished | None = None
        self._failed = False

    @property
    def ended(self) -> bool:
        """The remote interaction said how it ended (`interaction.completed`, or an `error` event other
        than a stream's own outage: following it again would read the same end)."""
        return self._end is not None or self._failed

    def reconnected(self) -> None:
        """A new response takes the stream up: what was left of a message in the cut one is dropped."""
        self._sse = SSEDecoder()

    def on_chunk(self, chunk: ev.AnyEvent) -> Events:
        if chunk.event_id:
            self.last_event_id = chunk.event_id
        if isinstance(chunk, ev.StepDelta):
            if self._open_text is not None and isinstance(chunk.delta, d.TextDelta):
                self._open_text.append(chunk.delta.text)
            return [up.StepDelta(delta=self._delta(chunk.delta))]
        if isinstance(chunk, ev.StepStart):
            return self._start(chunk.step)
        if isinstance(chunk, ev.StepStop):
            self._open_text = None
            return [up.StepEnded()]
        if isinstance(chunk, ev.InteractionStatusUpdate):
            return [up.UsageReported(usage=chunk.usage)] if chunk.usage is not None else []
        if isinstance(chunk, ev.InteractionCompleted):
            return self._completed(chunk.interaction)
        if isinstance(chunk, ev.InteractionCreated):
            self.remote_id = chunk.interaction.id
            return []
        error = stream_error(self.backend, chunk.error)
        self._failed = error.status != 503  # unavailable: the stream, not the interaction, failed
        raise error

    def finished(self) -> up.Finished:
        if self._end is None:
            raise up.UpstreamError(self.backend, 0, "the stream ended before interaction.completed")
        return self._end

    def on_invalid(self, message: SSEMessage, error: msgspec.ValidationError) -> Events:
        raw = msgspec.json.decode(message.data)
        if isinstance(raw, dict) and raw.get("event_type") not in _KNOWN:
            return []  # an event type newer than this server: nothing it could show
        return super().on_invalid(message, error)

    def whole(self, interaction: Interaction) -> Events:
        """A polled interaction that has ended: the steps not streamed yet, each whole, then its end."""
        steps = interaction.steps or []
        # its timeline starts with the input it was given (the conversation, sent whole): after it, its output
        inputs = [i for i, step in enumerate(steps) if isinstance(step, UserInputStep | FunctionResultStep)]
        output = steps[inputs[-1] + 1 :] if inputs else steps
        events = self._rest_of_open(output)
        for step in output[self.started :]:
            events += [*self._start(step), up.StepEnded()]
        return [*events, *self._completed(interaction), self.finished()]

    def _rest_of_open(self, output: list[Step]) -> Events:
        """The text a cut stream did not bring of the step it left open, as the polled step has it."""
        streamed, self._open_text = self._open_text, None
        if streamed is None or not 0 < self.started <= len(output):
            return []
        step = output[self.started - 1]
        full = text_of(step.content) if isinstance(step, ModelOutputStep) else ""
        sent = "".join(streamed)
        rest = full[len(sent) :] if full.startswith(sent) else ""
        return [*([up.StepDelta(delta=d.TextDelta(text=rest))] if rest else []), up.StepEnded()]

    def _start(self, step: Step) -> Events:
        self.started += 1
        self._open_text = [] if self._remote and isinstance(step, ModelOutputStep) else None
        step = self._sealed(step)
        if isinstance(step, FunctionCallStep) and step.arguments:
            whole = msgspec.structs.replace(step, arguments={})
            return [
                up.StepStarted(step=whole),
                up.StepDelta(delta=d.ArgumentsDelta(arguments=to_json(step.arguments))),
            ]
        return [up.StepStarted(step=step)]

    def _delta(self, delta: d.Delta) -> d.Delta:
        return self._sealed(delta)

    def _sealed(self, value: S) -> S:
        """`value` (a step or a delta) with its signature, if it has one, sealed as this backend's."""
        signature = getattr(value, "signature", None)
        if not isinstance(signature, str) or not signature or not isinstance(value, msgspec.Struct):
            return value
        return msgspec.structs.replace(value, signature=native.wrap(self.backend, signature))

    def _completed(self, interaction: Interaction) -> Events:
        status = interaction.status
        error: ErrorInfo | None = None
        if status in _ENDED_THERE:
            message = f"The remote interaction {interaction.id} ended as {status!r} at the upstream"
            status, error = st.FAILED, ErrorInfo(code=f"upstream_{status}", message=message)
        elif status not in _ENDS:
            raise up.UpstreamError(self.backend, 0, f"the remote interaction ended as {status!r}")
        if status == st.FAILED and error is None:
            error = (
                interaction.errors or [ErrorInfo(code="failed", message="The remote interaction failed")]
            )[0]
        self._end = up.Finished(status=status, error=error)
        return [up.UsageReported(usage=interaction.usage)] if interaction.usage is not None else []


def stream_error(backend: str, error: ErrorInfo) -> up.UpstreamError:
    """An `error` event: Google's words, and the status its code stands for (a number, or a gRPC name)."""
    code = str(error.code).strip().lower()
    status = int(code) if code.isdigit() and 400 <= int(code) < 600 else _CODES.get(code, 500)
    return up.UpstreamError(backend, status, error.message or code or "no message")
