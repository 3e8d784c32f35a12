"""What the backend tests share: building requests and reading decoded events."""

from __future__ import annotations

from typing import Any

import msgspec

from server.protocol.codec import convert
from server.protocol.content import TextContent
from server.protocol.interaction import InteractionConfig
from server.protocol.steps import Step, UserInputStep
from server.upstream.base import Backend, StepDelta, UpstreamEvent, UpstreamRequest


def request(history: list[Step], model: str, **config: Any) -> UpstreamRequest:
    return UpstreamRequest(
        model=model, upstream_model=model, history=history, config=convert(config, InteractionConfig)
    )


def user(text: str) -> UserInputStep:
    return UserInputStep(content=[TextContent(text=text)])


def deltas(events: list[UpstreamEvent]) -> list[Any]:
    return [e.delta for e in events if isinstance(e, StepDelta)]


def sent(body: msgspec.Struct) -> dict[str, Any]:
    """A request body as the upstream receives it: JSON, with the wire's own field names."""
    value: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(body))
    return value


async def streamed(backend: Backend, request: UpstreamRequest) -> list[UpstreamEvent]:
    """A backend's events for `request` (raising what it raises), its connections closed after."""
    try:
        return [event async for event in backend.stream(request)]
    finally:
        await backend.aclose()
