"""Sans-I/O pieces shared by the backends: the step sequencer and request-side helpers.

The runner expects one step at a time: StepStarted(skeleton) -> StepDelta* -> StepEnded. Providers interleave
freely (Gemini puts a signature on a text part, OpenAI sends reasoning and text in one chunk), so each decoder
says what it saw and the sequencer opens and closes steps around it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from ..backend_kinds import KINDS, NEWER
from ..errors import InvalidArgument
from ..protocol.base import UnknownMember
from ..protocol.content import (
    AudioContent,
    Content,
    DocumentContent,
    ImageContent,
    TextContent,
    VideoContent,
    text_of,
)
from ..protocol.deltas import ArgumentsDelta, Delta, TextDelta, ThoughtSignatureDelta, ThoughtSummaryDelta
from ..protocol.interaction import InteractionConfig
from ..protocol.steps import (
    FunctionCallStep,
    FunctionResultStep,
    ModelOutputStep,
    Step,
    ThoughtStep,
    UserInputStep,
)
from ..protocol.tools import McpServerTool, Tool
from .base import StepDelta, StepEnded, StepStarted, UpstreamEvent, UpstreamRequest

Events = list[UpstreamEvent]


class StepSequencer:
    """Opens and closes output steps so that they never overlap."""

    __slots__ = ("_argued", "_open", "_signed", "calls")

    def __init__(self) -> None:
        self._open: str | None = None  # "text", "thought", "call" or None
        self._signed = False  # the open thought step already has its signature
        self._argued = False  # the open call step has had an arguments fragment
        #: function calls emitted so far (a turn with calls ends in requires_action)
        self.calls = 0

    def end(self) -> Events:
        if self._open is None:
            return []
        events: Events = []
        if self._open == "call" and not self._argued:
            # OpenAI and Anthropic send no fragment for a call without arguments; clients that join the
            # fragments must still get a JSON object, as from Gemini (which sends `{}` whole)
            events.append(StepDelta(delta=ArgumentsDelta(arguments="{}")))
        self._open = None
        events.append(StepEnded())
        return events

    def _switch(self, kind: str, skeleton: Step) -> Events:
        events = self.end()
        self._open = kind
        self._signed = False
        self._argued = False
        events.append(StepStarted(step=skeleton))
        return events

    def text(self, text: str) -> Events:
        if not text:
            return []
        events = [] if self._open == "text" else self._switch("text", ModelOutputStep())
        events.append(StepDelta(delta=TextDelta(text=text)))
        return events

    def media(self, delta: Delta) -> Events:
        """Generated media (an image) belongs to the model's output step, like its text."""
        events = [] if self._open == "text" else self._switch("text", ModelOutputStep())
        events.append(StepDelta(delta=delta))
        return events

    def thought(
        self, summary: str | None = None, signature: str | None = None, *, new: bool = False
    ) -> Events:
        """Summary text and/or a (wrapped) signature; a second signature, or `new`, starts a new step."""
        if not summary and not signature:
            return []
        reuse = self._open == "thought" and not self._signed and not new
        events = [] if reuse else self._switch("thought", ThoughtStep())
        if summary:
            events.append(StepDelta(delta=ThoughtSummaryDelta(content=TextContent(text=summary))))
        if signature:
            events.append(StepDelta(delta=ThoughtSignatureDelta(signature=signature)))
            self._signed = True
        return events

    def function_call(self, call_id: str, name: str, arguments: str | None = None) -> Events:
        events = self._switch("call", FunctionCallStep(id=call_id, name=name, arguments={}))
        self.calls += 1
        events += self.arguments(arguments or "")
        return events

    def arguments(self, fragment: str) -> Events:
        if not fragment or self._open != "call":
            return []
        self._argued = True
        return [StepDelta(delta=ArgumentsDelta(arguments=fragment))]

    def whole(self, step: Step) -> Events:
        """A step that arrives complete (e.g. Gemini code execution): started and ended at once."""
        events = self._switch("whole", step)
        events += self.end()
        return events


# ---------------------------------------------------------------------------------------------------------
# Request-side helpers

_json = msgspec.json.Encoder()


def to_json(value: Any) -> str:
    return _json.encode(value).decode()


def result_text(result: Any) -> str:
    """A function result as text, for providers whose tool results are strings."""
    if isinstance(result, str):
        return result
    if isinstance(result, list) and result and all(isinstance(item, TextContent) for item in result):
        return text_of(result)
    try:
        return to_json(result)
    except (TypeError, msgspec.EncodeError):
        return str(result)


def json_output(config: InteractionConfig) -> tuple[bool, dict[str, Any] | None]:
    """(JSON output wanted, its JSON schema) from `response_format` or the legacy `response_mime_type`.

    `response_format` is `{type: "text", mime_type, schema}`, a list of such formats, or (sttp-ai) a bare
    JSON schema such as `{"type": "object", ...}`.
    """
    fmt = config.response_format
    if isinstance(fmt, list):
        fmt = next((f for f in fmt if isinstance(f, dict) and f.get("type") == "text"), None)
    if isinstance(fmt, dict):
        if fmt.get("type") == "text":
            schema = fmt.get("schema")
            wants = fmt.get("mime_type") == "application/json" or schema is not None
            return wants, schema if isinstance(schema, dict) else None
        if fmt.get("type") not in ("image", "audio", "video"):
            return True, fmt
    return config.response_mime_type == "application/json", None


def tool_choice(config: InteractionConfig) -> tuple[str | None, list[str] | None]:
    """(mode, allowed function names) of `generation_config.tool_choice`; mode is auto/any/none/validated."""
    choice = config.generation_config.tool_choice if config.generation_config else None
    if isinstance(choice, str):
        return choice, None
    if isinstance(choice, dict):
        allowed = choice.get("allowed_tools")
        if isinstance(allowed, dict):
            names = [t if isinstance(t, str) else t.get("name") for t in allowed.get("tools") or []]
            return allowed.get("mode") or "auto", [n for n in names if isinstance(n, str)] or None
    return None, None


def tool_type(tool: Tool) -> str:
    if isinstance(tool, UnknownMember):
        return tool.type or "unknown"
    return str(type(tool).__struct_config__.tag)  # type: ignore[attr-defined]


def unsupported_tool(backend: str, tool: Tool, index: int) -> InvalidArgument:
    return InvalidArgument(
        f"The built-in tool `{tool_type(tool)}` is not available with the {backend} backend",
        f"tools[{index}]",
    )


MEDIA_KINDS: dict[type[Any], str] = {
    ImageContent: "image",
    AudioContent: "audio",
    VideoContent: "video",
    DocumentContent: "document",
}


def check_request(
    backend: str,
    request: UpstreamRequest,
    kind: str,
    check_content: Callable[[Content, str], None] | None = None,
) -> None:
    """Refuse (a 400 naming the field) what a backend cannot take: a tool of a type its kind does not run
    (backend_kinds.py), and, with `check_content`, an input item it cannot read."""
    runs = KINDS[kind].tools
    for index, tool in enumerate(request.config.tools or []):
        # MCP servers are this server's to run (runner/tool_run.py): the model is offered their tools as
        # functions, which every backend takes
        if isinstance(tool, McpServerTool) or tool_type(tool) in runs:
            continue
        if not (NEWER in runs and isinstance(tool, UnknownMember)):
            raise unsupported_tool(backend, tool, index)
    if check_content is None:
        return
    for step in request.history:
        if isinstance(step, UserInputStep) and isinstance(step.content, list):
            for item in step.content:
                check_content(item, backend)


def unsupported_content(backend: str, content: Content, why: str = "") -> InvalidArgument:
    kind = MEDIA_KINDS.get(type(content), getattr(content, "type", "unknown"))
    detail = f" ({why})" if why else ""
    return InvalidArgument(f"The {backend} backend cannot take {kind} input{detail}", "input")


def data_url(mime_type: str | None, data: str) -> str:
    return f"data:{mime_type or 'application/octet-stream'};base64,{data}"


NO_RESULT = "No result was provided for this call."


class OpenCalls:
    """The function calls of a history still waiting for a result, as a request builder walks it.

    Providers reject a call that is not answered before the model's next turn (Gemini: a turn of N calls
    followed by fewer than N responses), yet a client may answer only some parallel calls, or reply with
    text instead. A batch of calls ends at a step that is neither a call nor a result, at a call that comes
    after results (the model's next turn), and at the end of the history; the builder then gives each call
    left open a stand-in result (`NO_RESULT`), in the provider's own form.
    """

    __slots__ = ("_open", "_results_seen")

    def __init__(self) -> None:
        self._open: list[FunctionCallStep] = []
        self._results_seen = False

    def unanswered_before(self, step: Step | None) -> list[FunctionCallStep]:
        """The calls to answer with a stand-in right before `step` (None: the end of the history)."""
        if isinstance(step, FunctionResultStep):
            return []
        if isinstance(step, FunctionCallStep) and not self._results_seen:
            return []  # another call of the same turn
        missing = self._open
        self._open = []
        self._results_seen = False
        return missing

    def called(self, step: FunctionCallStep) -> None:
        self._open.append(step)

    def answered(self, result: FunctionResultStep) -> bool:
        """Take `result`; False when no open call has its id (its call is not in the history, or was
        already answered), for the builder to pass it on some other way."""
        self._results_seen = True
        for index, call in enumerate(self._open):
            if call.id == result.call_id:
                del self._open[index]
                return True
        return False
