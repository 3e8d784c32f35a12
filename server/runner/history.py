"""The conversation handed to the model, and the fixes a stored turn needs from it."""

from __future__ import annotations

from ..protocol.steps import FunctionCallStep, FunctionResultStep, Step


def fill_function_result_names(history: list[Step], turn: list[Step]) -> bool:
    """Give each `function_result` of this turn the `name` of its call (clients may leave it out; sttp-ai
    needs it on the way back). Returns whether any step changed."""
    names: dict[str, str] | None = None
    changed = False
    for step in turn:
        if isinstance(step, FunctionResultStep) and not step.name:
            if names is None:
                names = {s.id: s.name for s in (*history, *turn) if isinstance(s, FunctionCallStep)}
            step.name = names.get(step.call_id)
            changed = changed or step.name is not None
    return changed
