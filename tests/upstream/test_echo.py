"""The echo model's input usage: every word it was given, the same whether a chain's earlier turns were
counted before (the same step objects, as the runner's history cache hands them on) or not."""

from __future__ import annotations

import pytest

from server.errors import InvalidArgument
from server.protocol.content import TextContent
from server.protocol.steps import ModelOutputStep, Step
from server.upstream.base import UpstreamEvent, UsageReported
from server.upstream.echo import EchoBackend

from .helpers import request, user


async def input_words(backend: EchoBackend, history: list[Step]) -> int:
    events: list[UpstreamEvent] = [event async for event in backend.stream(request(history, "echo"))]
    usage = [event.usage for event in events if isinstance(event, UsageReported)]
    assert usage[-1].total_input_tokens is not None
    return usage[-1].total_input_tokens


def answer(text: str) -> ModelOutputStep:
    return ModelOutputStep(content=[TextContent(text=text)])


async def test_a_chain_counts_the_same_with_its_earlier_turns_remembered() -> None:
    remembering, fresh = EchoBackend(), EchoBackend()
    history: list[Step] = []
    for turn in range(300):
        history = [*history, user(f"turn {turn} has five words")]
        words = 5 * (turn + 1) + 2 * turn
        assert await input_words(remembering, history) == words
        if turn % 50 == 0:
            # another backend, which has seen none of it, counts the very same
            assert await input_words(fresh, [*history]) == words
        history = [*history, answer("two words")]
    # the remembering backend looked only at the new steps: it knows the last turn's history by its end
    known, counted = remembering.counted.known([*history, user("one more")])
    assert known == len(history) - 1 and counted == 5 * 300 + 2 * 299


async def test_a_branch_or_an_edited_history_is_counted_in_full() -> None:
    backend = EchoBackend()
    root: list[Step] = [user("a b c")]
    assert await input_words(backend, root) == 3
    # a branch from the same root: its start is known, its own steps are counted
    assert await input_words(backend, [*root, answer("d e"), user("f")]) == 6
    # the same words in new step objects (a history decoded afresh): counted in full, the same
    assert await input_words(backend, [user("a b c"), answer("d e"), user("f g")]) == 7
    # a known step elsewhere than it was (other steps before it) is not trusted
    assert backend.counted.known([user("x"), root[0]]) == (0, 0)
    assert backend.counted.known([*root, user("y")]) == (1, 3)


async def test_a_parent_with_many_branches_stays_remembered() -> None:
    backend = EchoBackend()
    parent: list[Step] = [user("one two"), answer("three"), user("four")]
    assert await input_words(backend, parent) == 4
    for branch in range(backend.counted.SIZE + 10):
        assert await input_words(backend, [*parent, answer("x"), user(f"b{branch}")]) == 6
    assert backend.counted.known([*parent, user("again")]) == (3, 4)


async def test_siblings_of_a_parent_counted_elsewhere_count_only_their_own_steps() -> None:
    """The parent's turn ran in another process (or was forgotten): the first child counts it all, and
    its siblings (the same parent history, another last input) count only their input."""
    backend = EchoBackend()
    parent: list[Step] = [step for _ in range(100) for step in (user("three more words"), answer("and two"))]
    assert await input_words(backend, [*parent, user("first child")]) == 500 + 2
    assert backend.counted.known([*parent, user("a sibling here")]) == (200, 500)
    assert await input_words(backend, [*parent, user("a sibling here")]) == 500 + 3


def test_a_built_in_tool_is_refused_naming_it() -> None:
    """Echo calls functions; a built-in tool it cannot run is a 400, not a tool accepted and ignored."""
    backend = EchoBackend("echo-slow")
    tools = [{"type": "function", "name": "f"}, {"type": "google_search"}]
    with pytest.raises(InvalidArgument) as caught:
        backend.check(request([user("hi")], "echo-slow", tools=tools))
    assert caught.value.field == "tools[1]"
    assert "google_search" in str(caught.value) and "echo-slow" in str(caught.value)
    backend.check(request([user("hi")], "echo-slow", tools=tools[:1]))
