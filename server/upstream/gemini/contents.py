"""The history as Gemini's `contents`: alternating user and model turns of parts.

Gemini validates thought signatures where it finds them in the history, so a signature goes back on the part
it came with: on a thought part when the thought had a summary, else on the next part of the model's turn,
else on an empty text part that ends the turn (see the package docstring). Function responses are paired
with the calls of the turn before by position, so each call gets exactly one response, in the calls' order.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ...dialects.generate import wire
from ...protocol.content import (
    AudioContent,
    Content,
    DocumentContent,
    ImageContent,
    TextContent,
    VideoContent,
    text_of,
)
from ...protocol.steps import (
    CodeExecutionCallStep,
    CodeExecutionResultStep,
    FunctionCallStep,
    FunctionResultStep,
    ModelOutputStep,
    Step,
    ThoughtStep,
    UserInputStep,
)
from .. import native
from ..emit import NO_RESULT, OpenCalls, result_text
from .kind import KIND

_DEFAULT_MIME = {ImageContent: "image/png", AudioContent: "audio/wav", VideoContent: "video/mp4"}


class _Contents:
    """Appends parts to role turns, merging consecutive turns of one role."""

    def __init__(self) -> None:
        self.turns: list[wire.Content] = []
        self.pending_signatures: list[str] = []

    def add(self, role: str, part: wire.Part, *, takes_signature: bool = True) -> None:
        if role == "model" and takes_signature and self.pending_signatures:
            part = msgspec.structs.replace(part, thought_signature=self.pending_signatures.pop())
        if role != "model":
            self.flush_signatures()
        self._append(role, part)

    def _append(self, role: str, part: wire.Part) -> None:
        if self.turns and self.turns[-1].role == role:
            self.turns[-1].parts.append(part)
        else:
            self.turns.append(wire.Content(role=role, parts=[part]))

    def flush_signatures(self) -> None:
        """A signature with no part after it in its turn rides on an empty text part, as Gemini sent it."""
        for signature in self.pending_signatures:
            self._append("model", wire.Part(text="", thought_signature=signature))
        self.pending_signatures = []


class _Responses:
    """Function results held until the turn they belong to is complete, then sent in the calls' order."""

    def __init__(self, history: list[Step]) -> None:
        self.calls = native.CallIndex(history)
        self.open = OpenCalls()
        self.results: list[FunctionResultStep] = []
        # results with no open call: Gemini refuses a response without its call, the model reads text
        self.strays: list[FunctionResultStep] = []

    def take(self, result: FunctionResultStep) -> None:
        (self.results if self.open.answered(result) else self.strays).append(result)

    def flush(self, out: _Contents, before: Step | None) -> None:
        """Before `before` (None: the end), with a stand-in for each call its turn left unanswered."""
        self.results.extend(_stand_in(call) for call in self.open.unanswered_before(before))
        if isinstance(before, FunctionResultStep):
            return
        for result in self.calls.sort_results(self.results):
            response = wire.FunctionResponse(name=self.calls.name_of(result), response=_response(result))
            out.add("user", wire.Part(function_response=response))
        for result in self.strays:
            text = f"Result of function {self.calls.name_of(result)}: {result_text(result.result)}"
            out.add("user", wire.Part(text=text))
        self.results.clear()
        self.strays.clear()


def build_contents(history: list[Step], backend: str = KIND) -> list[wire.Content]:
    out = _Contents()
    responses = _Responses(history)
    for step in history:
        responses.flush(out, step)
        if isinstance(step, FunctionCallStep):
            # ids are ours (Gemini sends none); Gemini pairs responses with calls by name and order
            call = wire.FunctionCall(name=step.name, args=step.arguments)
            out.add("model", wire.Part(function_call=call))
            responses.open.called(step)
        elif isinstance(step, FunctionResultStep):
            responses.take(step)
        else:
            _add_step(out, step, backend)
    responses.flush(out, None)
    out.flush_signatures()
    return out.turns


def _add_step(out: _Contents, step: Step, backend: str) -> None:
    """A step other than a function call or result."""
    if isinstance(step, UserInputStep | ModelOutputStep):
        role = "user" if isinstance(step, UserInputStep) else "model"
        for item in step.content if isinstance(step.content, list) else []:
            part = content_part(item)
            if part is not None:
                out.add(role, part)
    elif isinstance(step, ThoughtStep):
        _add_thought(out, step, backend)
    elif isinstance(step, CodeExecutionCallStep):
        code = wire.ExecutableCode(
            language=str(step.arguments.get("language") or "python").upper(),
            code=step.arguments.get("code", ""),
        )
        out.add("model", _signed(wire.Part(executable_code=code), step.signature, backend))
    elif isinstance(step, CodeExecutionResultStep):
        out.add("model", _signed(_code_result(step), step.signature, backend))
    # other built-in tool steps and unknown steps carry nothing Gemini can take back


def _add_thought(out: _Contents, step: ThoughtStep, backend: str) -> None:
    signature = native.native_for(step.signature, backend)
    if not isinstance(signature, str):
        return  # no signature, or another backend's: Gemini gets nothing from it
    summary = text_of(step.summary or step.content)
    if summary:
        part = wire.Part(text=summary, thought=True, thought_signature=signature)
        out.add("model", part, takes_signature=False)
    else:
        out.pending_signatures.append(signature)


def _code_result(step: CodeExecutionResultStep) -> wire.Part:
    outcome = "OUTCOME_FAILED" if step.is_error else "OUTCOME_OK"
    result = step.result
    output = result if isinstance(result, str) else text_of(result) if isinstance(result, list) else ""
    return wire.Part(code_execution_result=wire.CodeExecutionResult(outcome=outcome, output=output))


def _stand_in(call: FunctionCallStep) -> FunctionResultStep:
    return FunctionResultStep(call_id=call.id, name=call.name, result=NO_RESULT, is_error=True)


def _signed(part: wire.Part, signature: str | None, backend: str) -> wire.Part:
    value = native.native_for(signature, backend)
    return msgspec.structs.replace(part, thought_signature=value) if isinstance(value, str) else part


def content_part(item: Content) -> wire.Part | None:
    if isinstance(item, TextContent):
        return wire.Part(text=item.text)
    if not isinstance(item, ImageContent | AudioContent | VideoContent | DocumentContent):
        return None
    mime = item.mime_type or _DEFAULT_MIME.get(type(item), "application/pdf")
    if item.data is not None:
        part = wire.Part(inline_data=wire.Blob(mime_type=mime, data=item.data))
    elif item.uri is not None:
        part = wire.Part(file_data=wire.FileData(mime_type=mime, file_uri=item.uri))
    else:
        return None
    if isinstance(item, VideoContent) and item.processing:
        processing = item.processing
        meta = wire.VideoMetadata(
            fps=processing.get("fps"),
            start_offset=processing.get("start_offset"),
            end_offset=processing.get("end_offset"),
        )
        if meta != wire.VideoMetadata():
            part.video_metadata = meta
    return part


def _response(result: FunctionResultStep) -> dict[str, Any]:
    """Gemini's functionResponse.response must be an object."""
    value = result.result
    if isinstance(value, list) and all(isinstance(item, Content) for item in value):
        value = text_of(value)
    if result.is_error:
        return {"error": value}
    return value if isinstance(value, dict) else {"result": value}
