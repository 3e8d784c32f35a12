"""The official SDK's replies, narrowed for the type checker to what this server sends.

The SDK types `interactions.create` as "an Interaction or a stream" whenever the model is not one of its
own model names (ours are `echo`, `echo-slow`, `gemini-3-flash`, …), and every field of an `Interaction`
as optional. Each helper asserts what the test would otherwise have failed on a line later (a stream where
an interaction was expected, an id or a usage that is missing) and returns the narrower type.
"""

from __future__ import annotations

from collections.abc import Iterable

from google.genai._interactions import AsyncStream, Stream
from google.genai.interactions import (
    Content,
    Interaction,
    InteractionSSEEvent,
    ModelOutputStep,
    Step,
    StepDelta,
    TextContent,
    TextDelta,
    UnknownInteractionSSEEvent,
    Usage,
    UserInputStep,
)

#: what `interactions.create` is typed to return, sync or async
Created = Interaction | Stream[InteractionSSEEvent] | AsyncStream[InteractionSSEEvent]


def interaction(reply: Created) -> Interaction:
    """The reply of a create without `stream=True`: one interaction."""
    assert isinstance(reply, Interaction), reply
    return reply


def all_events(reply: Interaction | Stream[InteractionSSEEvent]) -> list[InteractionSSEEvent]:
    """Every event of a reply with `stream=True` (of a create or a get), read to its end.

    (The SDK's `Stream` does not type its iteration: a plain `list(stream)` is a `list[Any]`.)
    """
    assert isinstance(reply, Stream), reply
    return list(reply)


def event_id_of(event: InteractionSSEEvent) -> str:
    """The id of an event the SDK knows; every event the server sends has one."""
    assert not isinstance(event, UnknownInteractionSSEEvent) and event.event_id, event
    return event.event_id


def id_of(reply: Interaction) -> str:
    """The id of a stored interaction."""
    assert reply.id, reply
    return reply.id


def usage_of(reply: Interaction) -> Usage:
    assert reply.usage is not None, reply
    return reply.usage


def output_text_of(reply: Interaction) -> str:
    assert reply.output_text is not None, reply
    return reply.output_text


def error_of(reply: Interaction) -> tuple[str, str]:
    """The code and the message of the first error of a failed interaction."""
    assert reply.errors, reply
    error = reply.errors[0]
    assert error.code is not None and error.message is not None, error
    return error.code, error.message


def steps_of(reply: Interaction) -> list[Step]:
    assert reply.steps is not None, reply
    return reply.steps


def text_of_step(step: Step) -> str:
    """The text of the first content of a user_input or model_output step."""
    assert isinstance(step, UserInputStep | ModelOutputStep), step
    assert step.content, step
    return text_of_content(step.content[0])


def text_of_content(content: Content) -> str:
    assert isinstance(content, TextContent), content
    return content.text


def streamed_text(events: Iterable[InteractionSSEEvent]) -> str:
    """The text of the step.delta events, every one of which is a text delta."""
    text = ""
    for event in events:
        if isinstance(event, StepDelta):
            assert isinstance(event.delta, TextDelta), event
            text += event.delta.text
    return text
