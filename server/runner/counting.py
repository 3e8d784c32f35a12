"""countTokens (the generateContent dialect): a backend's own count where it has one, else our estimate.

Gemini's backend asks Gemini (`models/{m}:countTokens`, with the turn's system instruction and tools),
Anthropic's asks Anthropic (`/v1/messages/count_tokens`); the echo models count the words they would take as
the turn's input. Elsewhere the estimate, documented as one
(README, "Gemini's generateContent"): a token for every four characters of text (the system instruction,
every text, a call's arguments and a result as JSON), and 258 for each image, audio, video or document part
(what Gemini counts an image as).
"""

from __future__ import annotations

import json
import math
from typing import Protocol, runtime_checkable

from ..protocol.content import Content, TextContent
from ..protocol.interaction import InteractionConfig
from ..protocol.steps import (
    FunctionCallStep,
    FunctionResultStep,
    ModelOutputStep,
    Step,
    ThoughtStep,
    UserInputStep,
)
from ..upstream.base import UpstreamRequest
from ..upstream.routing import Router

CHARS_PER_TOKEN = 4
MEDIA_TOKENS = 258


@runtime_checkable
class TokenCounter(Protocol):
    """A backend that counts a turn's tokens itself."""

    async def count_tokens(self, request: UpstreamRequest) -> int: ...


async def count_tokens(router: Router, config: InteractionConfig, steps: list[Step]) -> tuple[int, bool]:
    """(the count, whether it is our estimate) of what a turn of `config.model` on `steps` would be given."""
    model = config.model or ""
    backend, upstream_model = router.resolve(model)
    if isinstance(backend, TokenCounter):
        request = UpstreamRequest(model=model, upstream_model=upstream_model, history=steps, config=config)
        return await backend.count_tokens(request), False
    return estimate(steps, config.system_instruction), True


def estimate(steps: list[Step], system: str | None) -> int:
    chars, media = len(system or ""), 0
    for step in steps:
        if isinstance(step, UserInputStep | ModelOutputStep):
            items: list[Content] = step.content if isinstance(step.content, list) else []
            chars += sum(len(item.text) for item in items if isinstance(item, TextContent))
            media += sum(1 for item in items if not isinstance(item, TextContent))
        elif isinstance(step, ThoughtStep):
            chars += sum(len(item.text) for item in step.summary or [] if isinstance(item, TextContent))
        elif isinstance(step, FunctionCallStep):
            chars += len(step.name) + len(json.dumps(step.arguments or {}))
        elif isinstance(step, FunctionResultStep):
            chars += len(json.dumps(step.result, default=str))
    return math.ceil(chars / CHARS_PER_TOKEN) + media * MEDIA_TOKENS
