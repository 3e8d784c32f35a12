"""A trigger fires on each of the ways the README starts the service (`make run`, its Redis on a unix
socket and its worker inside; separate worker processes; your own Redis), through the official SDK."""

from __future__ import annotations

from typing import Any, cast

import pytest
from google import genai
from google.genai._gaos.types.interactions import CreateAgentInteractionParam

from ..waiting import until

EVERY_TOPOLOGY = True
pytestmark = pytest.mark.filterwarnings("ignore:Triggers usage is experimental:UserWarning")


def test_a_trigger_fires_and_runs_now(beta: genai.Client) -> None:
    body: dict[str, Any] = {"agent": "echo", "input": "are you there?"}
    made = beta.triggers.create(
        interaction=cast(CreateAgentInteractionParam, body),
        schedule="*/2 * * * * *",
        time_zone="Europe/London",
    )
    try:
        fired = until(
            lambda: (
                [
                    each
                    for each in beta.triggers.list_executions(made.id).trigger_executions or []
                    if each.status == "completed"
                ]
                or None
            ),
            timeout=10,
        )[0]
    finally:
        beta.triggers.update(made.id, status="paused")
    assert fired.interaction_id and fired.id.startswith("x")
    assert beta.interactions.get(fired.interaction_id).status == "completed"
    run = beta.triggers.run(made.id)
    assert run.status == "in_progress" and run.interaction_id
    beta.triggers.delete(made.id)
