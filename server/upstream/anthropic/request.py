"""The `MessagesRequest` for an `UpstreamRequest`: alternating messages of blocks, thinking, tools, sampling.

Thinking blocks go back only to Anthropic, byte for byte; a redacted one travels whole inside the wrapped
signature of a thought step with no summary. There is no JSON mode, so JSON output is asked for in the
system prompt.
"""

from __future__ import annotations

import base64
import binascii

from ...protocol.content import (
    AudioContent,
    Content,
    DocumentContent,
    ImageContent,
    TextContent,
    VideoContent,
    text_of,
)
from ...protocol.interaction import InteractionConfig
from ...protocol.steps import (
    FunctionCallStep,
    FunctionResultStep,
    ModelOutputStep,
    Step,
    ThoughtStep,
    UserInputStep,
)
from ...protocol.tools import THINKING_BUDGETS, FunctionTool, GenerationConfig
from .. import native
from ..base import UpstreamRequest
from ..emit import (
    NO_RESULT,
    OpenCalls,
    json_output,
    result_text,
    to_json,
    tool_choice,
    unsupported_content,
)
from . import wire
from .wire import KIND

DEFAULT_MAX_TOKENS = 4096
MIN_THINKING_BUDGET = 1024
_DOCUMENT_TYPES = ("application/pdf", "text/plain")


def check_content(item: Content, backend: str = KIND) -> None:
    if isinstance(item, AudioContent | VideoContent):
        raise unsupported_content(backend, item)
    if isinstance(item, DocumentContent) and (item.mime_type or "application/pdf") not in _DOCUMENT_TYPES:
        raise unsupported_content(backend, item, "only PDF and plain text documents")


def content_block(item: Content) -> wire.RequestBlock | None:
    if isinstance(item, TextContent):
        return wire.TextBlock(text=item.text) if item.text else None
    if not isinstance(item, ImageContent | DocumentContent):
        return None
    is_image = isinstance(item, ImageContent)
    mime = item.mime_type or ("image/png" if is_image else "application/pdf")
    source: wire.Source
    if item.data is not None:
        if mime == "text/plain":
            source = wire.PlainTextSource(media_type=mime, data=_decode_text(item.data))
        else:
            source = wire.Base64Source(media_type=mime, data=item.data)
    elif item.uri is not None:
        source = wire.URLSource(url=item.uri)
    else:
        return None
    return wire.ImageBlock(source=source) if is_image else wire.DocumentBlock(source=source)


def _decode_text(data: str) -> str:
    try:
        return base64.b64decode(data).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return data


class _Messages:
    """Blocks appended by role; Anthropic requires user and assistant turns to alternate."""

    def __init__(self, history: list[Step], backend: str) -> None:
        self.items: list[wire.Message] = []
        self.backend = backend
        self.calls = native.CallIndex(history)
        self.open = OpenCalls()

    def add(self, role: str, block: wire.RequestBlock) -> None:
        if self.items and self.items[-1].role == role:
            self.items[-1].content.append(block)
        else:
            self.items.append(wire.Message(role=role, content=[block]))

    def answer_missing(self, before: Step | None) -> None:
        for call in self.open.unanswered_before(before):
            tool_use_id = native.safe_call_id(call.id)
            self.add("user", wire.ToolResultBlock(tool_use_id=tool_use_id, content=NO_RESULT, is_error=True))

    def step(self, step: Step) -> None:
        if isinstance(step, UserInputStep):
            for item in step.content if isinstance(step.content, list) else []:
                block = content_block(item)
                if block is not None:
                    self.add("user", block)
        elif isinstance(step, ModelOutputStep):
            text = text_of(step.content)
            if text:
                self.add("assistant", wire.TextBlock(text=text))
        elif isinstance(step, ThoughtStep):
            self._thought(step)
        elif isinstance(step, FunctionCallStep):
            call_id = native.safe_call_id(step.id)
            self.add("assistant", wire.ToolUseBlock(id=call_id, name=step.name, input=step.arguments))
            self.open.called(step)
        elif isinstance(step, FunctionResultStep):
            self._result(step)
        # built-in tool steps and unknown steps: nothing Anthropic can take back

    def _thought(self, step: ThoughtStep) -> None:
        value = native.native_for(step.signature, self.backend)
        if isinstance(value, str):
            thinking = text_of(step.summary or step.content)
            self.add("assistant", wire.ThinkingBlock(thinking=thinking, signature=value))
        elif isinstance(value, dict) and isinstance(value.get("redacted"), str):
            self.add("assistant", wire.RedactedThinkingBlock(data=value["redacted"]))
        # a thought from another backend, or without a signature, is not sent

    def _result(self, step: FunctionResultStep) -> None:
        if self.open.answered(step):
            tool_use_id = native.safe_call_id(step.call_id)
            result = wire.ToolResultBlock(
                tool_use_id=tool_use_id, content=result_text(step.result), is_error=step.is_error or None
            )
            self.add("user", result)
        else:
            text = f"Result of function {self.calls.name_of(step)}: {result_text(step.result)}"
            self.add("user", wire.TextBlock(text=text))


def build_messages(history: list[Step], backend: str = KIND) -> list[wire.Message]:
    out = _Messages(history, backend)
    for step in history:
        out.answer_missing(step)
        out.step(step)
    out.answer_missing(None)
    return out.items


def build_body(request: UpstreamRequest, backend: str = KIND) -> wire.MessagesRequest:
    config = request.config
    gen = config.generation_config
    messages = build_messages(request.history, backend)
    max_tokens = gen.max_output_tokens if gen and gen.max_output_tokens else DEFAULT_MAX_TOKENS
    body = wire.MessagesRequest(
        model=request.upstream_model,
        messages=messages,
        max_tokens=max_tokens,
        stream=True,
        system=_system(config) or None,
    )
    thinking = _thinking_budget(request, messages, max_tokens)
    if thinking is not None:
        budget, body.max_tokens = thinking
        body.thinking = wire.Thinking(budget_tokens=budget)
    if gen is not None:
        _sampling(body, gen)
    tools = [_tool(tool) for tool in config.tools or [] if isinstance(tool, FunctionTool)]
    if tools:
        body.tools = tools
        body.tool_choice = _tool_choice(config)
    return body


def _system(config: InteractionConfig) -> str:
    system = config.system_instruction or ""
    wants_json, schema = json_output(config)
    if wants_json:
        # no JSON mode in the Messages API: ask for it in the system prompt
        rule = "Respond with a single JSON value only, no prose and no code fences."
        if schema is not None:
            rule += f" It must match this JSON schema: {to_json(schema)}"
        system = f"{system}\n\n{rule}" if system else rule
    return system


def _sampling(body: wire.MessagesRequest, gen: GenerationConfig) -> None:
    body.stop_sequences = gen.stop_sequences or None
    if body.thinking is None:  # with thinking on, Anthropic rejects sampling parameters
        body.temperature = gen.temperature
        body.top_p = gen.top_p
        body.top_k = gen.top_k


def _thinking_budget(
    request: UpstreamRequest, messages: list[wire.Message], max_tokens: int
) -> tuple[int, int] | None:
    """(budget_tokens, max_tokens) when extended thinking is asked for and possible, else None."""
    gen = request.config.generation_config
    level = gen.thinking_level if gen else None
    if not level or level == "minimal":
        return None
    # continuing a tool call that was made without thinking (e.g. by another backend) with thinking on is
    # rejected: the last assistant turn must then start with a thinking block
    last = next((m for m in reversed(messages) if m.role == "assistant"), None)
    if last is not None and any(isinstance(b, wire.ToolUseBlock) for b in last.content):
        if not isinstance(last.content[0], wire.ThinkingBlock | wire.RedactedThinkingBlock):
            return None
    budget = THINKING_BUDGETS.get(level, 4096)
    if budget >= max_tokens:
        if gen is not None and gen.max_output_tokens:
            budget = max_tokens - 1  # the client's cap wins over the level
        else:
            max_tokens = budget + DEFAULT_MAX_TOKENS
    if budget < MIN_THINKING_BUDGET:
        return None
    return budget, max_tokens


def _tool(tool: FunctionTool) -> wire.ToolSpec:
    schema = tool.parameters or {"type": "object", "properties": {}}
    return wire.ToolSpec(name=tool.name, input_schema=schema, description=tool.description or None)


def _tool_choice(config: InteractionConfig) -> wire.ToolChoice | None:
    mode, names = tool_choice(config)
    if names and len(names) == 1 and mode in ("any", "validated"):
        return wire.ToolChoice(type="tool", name=names[0])
    if mode in ("auto", "any", "none"):
        return wire.ToolChoice(type=mode)
    return None
