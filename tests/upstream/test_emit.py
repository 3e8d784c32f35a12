"""What the backends share: the function-call step's wire shape, the step sequencer, and open calls."""

from __future__ import annotations

import msgspec

from server.protocol.codec import convert
from server.protocol.steps import FunctionCallStep, FunctionResultStep, Step, UserInputStep
from server.store import records
from server.upstream.base import StepDelta, StepEnded, StepStarted
from server.upstream.emit import OpenCalls, StepSequencer

from .helpers import deltas


def test_a_call_without_arguments_always_carries_them() -> None:
    """Absent in a client's input or an old record, `arguments` is `{}` wherever the step is written."""
    sent = convert({"type": "function_call", "id": "c1", "name": "now"}, Step)
    assert sent == FunctionCallStep(id="c1", name="now", arguments={})
    made = FunctionCallStep(id="c1", name="now")
    expected = {"type": "function_call", "id": "c1", "name": "now", "arguments": {}}
    assert msgspec.json.decode(msgspec.json.encode(made)) == expected
    stored = records.decode_steps(records.encode([made]))
    assert stored == [made] and msgspec.json.decode(msgspec.json.encode(stored[0])) == expected
    # two calls never share one arguments object
    assert FunctionCallStep(id="a", name="f").arguments is not FunctionCallStep(id="b", name="f").arguments


def test_sequencer_gives_a_call_without_fragments_an_empty_object() -> None:
    steps = StepSequencer()
    events = steps.function_call("a", "now") + steps.text("then text") + steps.function_call("b", "f", "{}")
    events += steps.end()
    assert [type(e) for e in events] == [
        StepStarted,
        StepDelta,  # "{}" for the call that had no fragment, before its end
        StepEnded,
        StepStarted,
        StepDelta,
        StepEnded,
        StepStarted,
        StepDelta,  # the upstream's own "{}": not doubled
        StepEnded,
    ]
    assert [getattr(d, "arguments", getattr(d, "text", None)) for d in deltas(events)] == [
        "{}",
        "then text",
        "{}",
    ]


def call(call_id: str) -> FunctionCallStep:
    return FunctionCallStep(id=call_id, name="f")


def result(call_id: str) -> FunctionResultStep:
    return FunctionResultStep(call_id=call_id, result="ok")


def walk(history: list[Step]) -> list[tuple[str, list[str]]]:
    """(step, ids of the calls to answer with a stand-in right before it) along a history, as a builder."""
    open_calls = OpenCalls()
    seen: list[tuple[str, list[str]]] = []
    for step in [*history, None]:
        missing = [c.id for c in open_calls.unanswered_before(step)]
        if isinstance(step, FunctionCallStep):
            open_calls.called(step)
            seen.append((step.id, missing))
        elif isinstance(step, FunctionResultStep):
            seen.append((f"{step.call_id}:{open_calls.answered(step)}", missing))
        else:
            seen.append(("end" if step is None else "user_input", missing))
    return seen


def test_open_calls_end_a_batch_where_the_model_takes_its_next_turn() -> None:
    # one of two parallel calls answered, then the model calls again: call 2 is answered before call 3
    assert walk([call("1"), call("2"), result("1"), call("3"), result("3")]) == [
        ("1", []),
        ("2", []),
        ("1:True", []),
        ("3", ["2"]),
        ("3:True", []),
        ("end", []),
    ]
    # text instead of results; a late result for a call already stood in for, and one for no call
    assert walk([call("1"), UserInputStep(content="no"), result("1"), result("9")]) == [
        ("1", []),
        ("user_input", ["1"]),
        ("1:False", []),
        ("9:False", []),
        ("end", []),
    ]
    # calls left open at the end of the history
    assert walk([call("1"), call("2")])[-1] == ("end", ["1", "2"])
