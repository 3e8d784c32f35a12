"""The built-in `echo` models: deterministic answers with no upstream, to try and test the lifecycle.

`echo` answers at once with the last user input, word by word; `echo-slow` waits a configurable delay
before each word. Usage counts words. An answer stops at `[echo] max_output_words` with status
`incomplete`, and a long one hands the event loop back every few words, so that no request holds up the
others of its process. Given function tools, it first calls the first one (arguments
derived from the input) and ends with `requires_action`; after the client's `function_result` it answers
with the input and the results.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import AsyncGenerator, Iterator
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
from ..settings import EchoSettings
from .base import Finished, StepDelta, StepEnded, StepStarted, UpstreamEvent, UpstreamRequest, UsageReported
from .emit import check_request

_WORD = re.compile(r"\S+\s*")
#: words made between two hand-backs of the event loop: each costs the runner some microseconds, so this is
#: about a millisecond of work, and a short answer never pauses
_WORDS_PER_YIELD = 64
#: characters of input counted between two hand-backs of the event loop
_CHARS_PER_YIELD = 1 << 16


class EchoBackend:
    def __init__(
        self,
        name: str = "echo",
        word_delay: float = 0.0,
        max_words: int = EchoSettings().max_output_words,
    ) -> None:
        self.name = name
        self.word_delay = word_delay
        self.max_words = max_words
        self.counted = _CountedHistories()

    async def count_tokens(self, request: UpstreamRequest) -> int:
        """What a turn on the request's history counts as its input (runner/counting.py: countTokens)."""
        return await _words(request.history)

    async def _input_words(self, history: list[Step]) -> int:
        """The words of `history`, counting only what follows its longest start counted before. The
        counts through its last step and through the one before are remembered: the next turn of the
        chain starts with this whole history, and a sibling (another branch from the same parent, as a
        retried or regenerated turn is) with all of it but the last input."""
        start, words = self.counted.known(history)
        last = len(history) - 1
        if start > last:
            return words
        if start < last:
            words += await _words(history[start:last])
            self.counted.remember(history, last - 1, words)
        words += await _words(history[last:])
        self.counted.remember(history, last, words)
        return words

    def check(self, request: UpstreamRequest) -> None:
        check_request(self.name, request, "echo")  # it calls functions, and no built-in tool

    async def aclose(self) -> None:
        return None

    async def stream(self, request: UpstreamRequest) -> AsyncGenerator[UpstreamEvent, None]:
        history = request.history
        prompt = _last_user_text(history)
        input_words = await self._input_words(history)
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
        limit = (request.config.generation_config or _NO_CONFIG).max_output_tokens
        words = _Words(answer, self.max_words if limit is None else min(limit, self.max_words))
        yield StepStarted(step=ModelOutputStep())
        produced = 0
        for word in words:
            if self.word_delay:
                await asyncio.sleep(self.word_delay)
            elif produced % _WORDS_PER_YIELD == _WORDS_PER_YIELD - 1:
                await asyncio.sleep(0)
            produced += 1
            yield StepDelta(delta=TextDelta(text=word))
            if self.word_delay:
                yield UsageReported(usage=_usage(input_words, produced))
        yield StepEnded()
        yield UsageReported(usage=_usage(input_words, produced))
        yield Finished(status="incomplete" if words.truncated else "completed")


class _Words:
    """The words of an answer, each with the spaces after it, read as they are sent (an answer can be
    megabytes long), at most `limit` of them; the last one without its spaces when the limit cut it short.
    A text with no words is one empty word."""

    def __init__(self, text: str, limit: int) -> None:
        self.text = text
        self.limit = limit
        self.truncated = False

    def __iter__(self) -> Iterator[str]:
        text = self.text.strip()
        # a short text is split at once; a long one as its words are sent
        if len(text) <= _CHARS_PER_YIELD:
            words: Iterator[str] = iter(_WORD.findall(text))
        else:
            words = (match.group() for match in _WORD.finditer(text))
        word = next(words, "")
        produced = 0
        while True:
            if produced >= self.limit:
                self.truncated = True
                return
            following = next(words, None)
            if following is not None and produced + 1 == self.limit:
                word = word.rstrip()
            produced += 1
            yield word
            if following is None:
                return
            word = following


class _CountedHistories:
    """The input words of the histories answered lately, by a step they end with, so that a chain's next
    turn counts only its new steps: it continues its parent's history with the very step objects (the runner
    keeps finished histories, runner/histories.py). Counting a 1000-turn chain's 2000 steps again was half
    of such a turn's CPU. A step is known by identity and place (the entry holds it, so its id is not
    reused); a history decoded afresh, or a step elsewhere than it was, counts in full."""

    #: histories remembered (the least recently used forgotten first): a few per conversation under way
    SIZE = 4096
    #: steps looked back for a known one: a turn adds a few (an input, calls and their results, an output)
    LOOKBACK = 64

    def __init__(self) -> None:
        #: id of a step: (that step, its index in its history, the words up to and including it)
        self.by_step: dict[int, tuple[Step, int, int]] = {}

    def known(self, history: list[Step]) -> tuple[int, int]:
        """(steps already counted, their words): the longest remembered start of `history`."""
        for index in range(len(history) - 1, max(-1, len(history) - 1 - self.LOOKBACK), -1):
            step = history[index]
            hit = self.by_step.get(id(step))
            if hit is not None and hit[0] is step and hit[1] == index:
                # used again: the last to be forgotten (a chain's parent serves each of its branches)
                self.by_step[id(step)] = self.by_step.pop(id(step))
                return index + 1, hit[2]
        return 0, 0

    def remember(self, history: list[Step], index: int, words: int) -> None:
        """`words`: the words of `history` up to and including its step at `index`."""
        step = history[index]
        self.by_step[id(step)] = (step, index, words)
        if len(self.by_step) > self.SIZE:
            del self.by_step[next(iter(self.by_step))]


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


def _count_words(history: list[Step], long_texts: list[str]) -> int:
    """The words of everything the model was given (a loop, not a call per step: chains get long), but for
    the texts too long to split at once: those are added to `long_texts`."""
    words = 0
    for step in history:
        if isinstance(step, (UserInputStep, ModelOutputStep)):
            items = step.content
        elif isinstance(step, ThoughtStep):
            items = step.summary or []
        elif isinstance(step, FunctionResultStep):
            items = [TextContent(text=_result_text(step.result))]
        else:
            continue
        for item in items:
            if isinstance(item, TextContent):
                if len(item.text) <= _CHARS_PER_YIELD:
                    words += len(item.text.split())
                else:
                    long_texts.append(item.text)
    return words


async def _words(steps: list[Step]) -> int:
    """The words of `steps`; a text too long to split at once is counted in slices, with the event loop
    handed back in between."""
    long_texts: list[str] = []
    words = _count_words(steps, long_texts)
    for text in long_texts:
        words += await _words_in(text)
    return words


async def _words_in(text: str) -> int:
    """The words of a text of any length, counted a slice at a time with the event loop handed back in
    between (splitting megabytes at once would hold up every other request of the process)."""
    words = 0
    for at in range(0, len(text), _CHARS_PER_YIELD):
        if at:
            await asyncio.sleep(0)
            if not text[at - 1].isspace() and not text[at].isspace():
                words -= 1  # the word across the cut is in both slices
        words += len(text[at : at + _CHARS_PER_YIELD].split())
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
