"""The tool loop of a run whose request names MCP servers: the server calls their tools for the model.

The MCP servers' tools are offered to the model as functions, named `<server>__<tool>`. When the model
calls one, the call is not the client's to answer: the run shows it as an `mcp_server_tool_call` step,
calls the tool (server/tools/mcp.py), shows the `mcp_server_tool_result`, and calls the model again with
both (as the function call and result it made them from), until the model answers without calling one, or
`[tools] max_model_calls` model calls were made, or the calls' time budget ran out (then `incomplete`).
A model call that also asks for the client's own functions ends the run `requires_action` once the MCP
calls of that call are done; the client's `function_result` continues it as a new turn, whose history
shows the MCP steps to the model as the functions they were.

What the model sees and what the client sees differ only in those names and step types: `ModelCall` keeps
the model's view of one call (a TurnBuilder of its own, fed the upstream's events as they are) and passes
the client's view on.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

import msgspec

from ..protocol.deltas import McpServerToolCallDelta, McpServerToolResultDelta
from ..protocol.interaction import Usage
from ..protocol.steps import (
    FunctionCallStep,
    FunctionResultStep,
    McpServerToolCallStep,
    McpServerToolResultStep,
    Step,
)
from ..protocol.tools import FunctionTool, McpServerTool, Tool
from ..tools.mcp import CallResult, McpTool
from ..upstream import base as up
from ..upstream.base import UpstreamRequest
from .turn import TurnBuilder

SEPARATOR: Final = "__"
#: what function names may hold at every provider (OpenAI's rule, the strictest), and their longest
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_LONGEST: Final = 64


def offered_name(server_name: str, tool: str) -> str:
    """The function name the model calls an MCP tool by."""
    return _UNSAFE.sub("_", f"{server_name}{SEPARATOR}{tool}")[:_LONGEST]


def mcp_servers(tools: list[Tool] | None) -> list[McpServerTool]:
    return [tool for tool in tools or () if isinstance(tool, McpServerTool)]


def model_view(history: list[Step]) -> list[Step]:
    """A history as the model is shown it: MCP steps as the function calls and results they came from."""
    if not any(isinstance(step, (McpServerToolCallStep, McpServerToolResultStep)) for step in history):
        return history
    shown: list[Step] = []
    for step in history:
        if isinstance(step, McpServerToolCallStep):
            name = offered_name(step.server_name, step.name)
            shown.append(FunctionCallStep(id=step.id, name=name, arguments=step.arguments))
        elif isinstance(step, McpServerToolResultStep):
            name = offered_name(step.server_name or "", step.name or "")
            shown.append(FunctionResultStep(call_id=step.call_id, name=name, result=step.result))
        else:
            shown.append(step)
    return shown


def offered_request(request: UpstreamRequest, tools: list[McpTool]) -> UpstreamRequest:
    """The request with its MCP servers replaced by their tools, as functions, and its history shown as
    the model is shown it."""
    config = request.config
    kept = [tool for tool in config.tools or () if not isinstance(tool, McpServerTool)]
    functions: list[Tool] = [
        FunctionTool(
            name=offered_name(tool.server_name, tool.name),
            description=tool.description,
            parameters=tool.input_schema,
        )
        for tool in tools
    ]
    return msgspec.structs.replace(
        request,
        config=msgspec.structs.replace(config, tools=[*kept, *functions]),
        history=model_view(request.history),
    )


class PendingCall(msgspec.Struct, frozen=True):
    """An MCP call the model made, as the model made it and as the client is shown it."""

    made: FunctionCallStep
    shown: McpServerToolCallStep


class ModelCall:
    """One model call of the loop: the upstream's events in, the client's events out."""

    def __init__(self, tools: dict[str, McpTool], usage_before: Usage | None) -> None:
        self.tools = tools
        self.model = TurnBuilder()
        self.pending: list[PendingCall] = []
        self.client_calls = 0
        self.held: up.Finished | None = None
        self.usage_before = usage_before
        self.usage: Usage | None = usage_before
        self._buffering = False

    def feed(self, event: up.UpstreamEvent) -> Iterator[up.UpstreamEvent]:
        if self._buffering and not isinstance(event, up.StepDelta):
            # whatever follows an MCP call's arguments ends it
            yield from self._end_mcp_call()
            if isinstance(event, up.StepEnded):
                return
        self.model.feed(event)
        if self._buffering:
            return  # a fragment of the MCP call's arguments: the model's view has it
        if isinstance(event, up.StepStarted) and isinstance(event.step, FunctionCallStep):
            if event.step.name in self.tools:
                self._buffering = True
                return
            self.client_calls += 1
        yield from self._pass(event)

    def _pass(self, event: up.UpstreamEvent) -> Iterator[up.UpstreamEvent]:
        if isinstance(event, up.UsageReported):
            self.usage = add_usage(self.usage_before, event.usage)
            yield up.UsageReported(usage=self.usage)
        elif isinstance(event, up.Finished) and self.pending and event.status == "requires_action":
            # the loop decides: more model calls, or requires_action for the client's own calls
            self.held = event
        else:
            yield event

    def _end_mcp_call(self) -> Iterator[up.UpstreamEvent]:
        """The call the model finished writing (the model's turn has it whole), shown as an MCP step."""
        self._buffering = False
        self.model.close_step()
        made = self.model.steps[-1]
        assert isinstance(made, FunctionCallStep)
        tool = self.tools[made.name]
        shown = McpServerToolCallStep(
            id=made.id, name=tool.name, server_name=tool.server_name, arguments=made.arguments
        )
        self.pending.append(PendingCall(made=made, shown=shown))
        # as Google streams it: the step's skeleton, then a delta of its own type with the arguments
        yield up.StepStarted(step=msgspec.structs.replace(shown, arguments={}))
        delta = McpServerToolCallDelta(name=tool.name, server_name=tool.server_name, arguments=made.arguments)
        yield up.StepDelta(delta=delta)
        yield up.StepEnded()


def result_events(call: PendingCall, outcome: CallResult) -> list[up.UpstreamEvent]:
    shown = call.shown
    step = McpServerToolResultStep(call_id=shown.id, name=shown.name, server_name=shown.server_name)
    delta = McpServerToolResultDelta(result=outcome.result, name=shown.name, server_name=shown.server_name)
    return [up.StepStarted(step=step), up.StepDelta(delta=delta), up.StepEnded()]


def result_for_model(call: PendingCall, outcome: CallResult) -> FunctionResultStep:
    return FunctionResultStep(
        call_id=call.made.id, name=call.made.name, result=outcome.result, is_error=outcome.is_error or None
    )


def add_usage(before: Usage | None, now: Usage) -> Usage:
    """The usage of the model calls so far: each call's report is cumulative within that call only."""
    if before is None:
        return now
    fields = (
        "total_input_tokens",
        "total_output_tokens",
        "total_thought_tokens",
        "total_cached_tokens",
        "total_tool_use_tokens",
        "total_tokens",
    )
    summed = {
        name: (getattr(before, name) or 0) + (getattr(now, name) or 0)
        for name in fields
        if getattr(before, name) is not None or getattr(now, name) is not None
    }
    return msgspec.structs.replace(now, **summed)
