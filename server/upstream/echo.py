"""The built-in `echo` models: deterministic answers with no upstream, to try and test the lifecycle.

`echo` answers at once with the last user input, word by word; `echo-slow` waits a configurable delay
before each word. Usage counts words. Given function tools, it first calls the first one (arguments
derived from the input) and ends with `requires_action`; after the client's `function_result` it answers
with the input and the results.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import AsyncGenerator
from typing import Any

import msgspec

from ..protocol.content import TextContent, text_of
from ..protocol.deltas import ArgumentsDelta, TextDelta
from ..protocol.interaction import Usage
from ..protocol.steps import (
    FunctionCallStep,
    FunctionResultStep,
    ModelOutputStep,
    Step,
    ThoughtStep,
    UserInputStep,
)
from ..protocol.tools import FunctionTool
from .base import Finished, StepDelta, StepEnded, StepStarted, UpstreamEvent, UpstreamRequest, UsageReported

_WORD = re.compile(r"\S+\s*")


class EchoBackend:
    def __init__(self, name: str = "echo", word_delay: float = 0.0) -> None:
        self.name = name
        self.word_delay = word_delay

    def check(self, request: UpstreamRequest) -> None:
        return None

    async def aclose(self) -> None:
        return None

    async def stream(self, request: UpstreamRequest) -> AsyncGenerator[UpstreamEvent, None]:
        history = request.history
        prompt = _last_user_text(history)
        input_words = _count_words(history)
        tools = [t for t in request.config.tools or () if isinstance(t, FunctionTool)]
        results = _trailing_results(history)
        if tools and not results:
            tool = tools[0]
            calls = sum(isinstance(s, FunctionCallStep) for s in history)
            digest = hashlib.sha1(prompt.encode()).hexdigest()[:8]
            call_id = f"call_{digest}_{calls + 1}"
            arguments = msgspec.json.encode(_arguments_for(tool, prompt)).decode()
            yield StepStarted(step=FunctionCallStep(id=call_id, name=tool.name, arguments={}))
            yield StepDelta(delta=ArgumentsDelta(arguments=arguments))
            yield StepEnded()
            yield UsageReported(usage=_usage(input_words, 0))
            yield Finished(status="requires_action")
            return
        answer = prompt
        if results:
            answer += "".join(f" [{r.name or r.call_id}: {_result_text(r.result)}]" for r in results)
        words = _WORD.findall(answer.strip()) or [""]
        limit = (request.config.generation_config or _NO_CONFIG).max_output_tokens
        status = "completed"
        if limit is not None and len(words) > limit:
            words, status = words[:limit], "incomplete"
            words[-1:] = [w.rstrip() for w in words[-1:]]
        yield StepStarted(step=ModelOutputStep())
        produced = 0
        for word in words:
            if self.word_delay:
                await asyncio.sleep(self.word_delay)
            produced += 1
            yield StepDelta(delta=TextDelta(text=word))
            if self.word_delay:
                yield UsageReported(usage=_usage(input_words, produced))
        yield StepEnded()
        yield UsageReported(usage=_usage(input_words, produced))
        yield Finished(status=status)


class _NoConfig:
    max_output_tokens: int | None = None


_NO_CONFIG = _NoConfig()


def _usage(input_words: int, output_words: int) -> Usage:
    return Usage(
        total_input_tokens=input_words,
        total_output_tokens=output_words,
        total_tokens=input_words + output_words,
    )


def _last_user_text(history: list[Step]) -> str:
    for step in reversed(history):
        if isinstance(step, UserInputStep):
            return text_of(step.content)  # type: ignore[arg-type]
    return ""


def _trailing_results(history: list[Step]) -> list[FunctionResultStep]:
    """The function results after the last user input: the model is answering them."""
    results: list[FunctionResultStep] = []
    for step in reversed(history):
        if isinstance(step, UserInputStep):
            break
        if isinstance(step, FunctionResultStep):
            results.append(step)
    return results[::-1]


def _count_words(history: list[Step]) -> int:
    """The words of everything the model was given (a loop, not a call per step: chains get long)."""
    words = 0
    for step in history:
        if isinstance(step, (UserInputStep, ModelOutputStep)):
            items = step.content
        elif isinstance(step, ThoughtStep):
            items = step.summary or []
        elif isinstance(step, FunctionResultStep):
            words += len(_result_text(step.result).split())
            continue
        else:
            continue
        for item in items:
            if isinstance(item, TextContent):
                words += len(item.text.split())
    return words


def _arguments_for(tool: FunctionTool, prompt: str) -> dict[str, Any]:
    """The input goes into the first string parameter (or `input` when the schema names none)."""
    properties = (tool.parameters or {}).get("properties") or {}
    for name, schema in properties.items():
        if isinstance(schema, dict) and schema.get("type") in ("string", "STRING"):
            return {name: prompt}
    return {} if properties else {"input": prompt}


def _result_text(result: Any) -> str:
    if isinstance(result, str):
        return result
    if isinstance(result, list):
        texts = [item.get("text", "") for item in result if isinstance(item, dict)]
        if any(texts):
            return "".join(texts)
    return msgspec.json.encode(result).decode()
