"""The conversation handed to the model, and the fixes a stored turn needs from it."""

from __future__ import annotations

from ..protocol.content import Content, FunctionResultContent
from ..protocol.steps import FunctionCallStep, FunctionResultStep, Step, UserInputStep


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


def model_steps(history: list[Step]) -> list[Step]:
    """The history as every backend reads it: a `function_result` item of a `user_input` step (how the
    Vercel AI SDK answers a call) becomes the `function_result` step it means, in its place. The results
    come first, then the rest of the step's content as a `user_input` of its own: they answer the calls
    before them, and a provider takes no user text between a call and its result. A history with no such
    item is returned as it is (the same list: a chain's steps are not copied for every turn), and a history
    already converted is left alone, so a remembered one (runner/histories.py) converts to itself."""
    if not any(_holds_results(step) for step in history):
        return history
    shown: list[Step] = []
    for step in history:
        if isinstance(step, UserInputStep) and _holds_results(step):
            shown.extend(_split(step.content))  # type: ignore[arg-type]
        else:
            shown.append(step)
    return shown


def _holds_results(step: Step) -> bool:
    return isinstance(step, UserInputStep) and any(
        isinstance(item, FunctionResultContent) for item in step.content
    )


def _split(content: list[Content]) -> list[Step]:
    results: list[Step] = []
    rest: list[Content] = []
    for item in content:
        if isinstance(item, FunctionResultContent):
            results.append(
                FunctionResultStep(
                    call_id=item.call_id, result=item.result, name=item.name, is_error=item.is_error
                )
            )
        else:
            rest.append(item)
    return [*results, UserInputStep(content=rest)] if rest else results
