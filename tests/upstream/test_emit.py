"""What the backends share: the function-call step's wire shape and the step sequencer."""

from __future__ import annotations

import msgspec

from server.protocol.codec import convert
from server.protocol.steps import FunctionCallStep, Step
from server.store import records
from server.upstream.base import StepDelta, StepEnded, StepStarted
from server.upstream.emit import StepSequencer

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
