"""Triggers firing on the shared server (its worker embedded), through the official SDK: each time makes
one execution, which continues the trigger's last interaction; paused triggers do not fire; the failure
limit; a run past its timeout; a time that comes while the last run still goes. Schedules of a few
seconds (six fields, seconds first: the tests' [triggers] min_interval_seconds is 1)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

import pytest
from google import genai
from google.genai._gaos.types.interactions import CreateAgentInteractionParam
from google.genai._gaos.types.triggers import TriggerExecution

from ..replies import interaction
from ..waiting import until

pytestmark = pytest.mark.filterwarnings("ignore:Triggers usage is experimental:UserWarning")

EVERY_2S = "*/2 * * * * *"
YEARLY = "0 9 1 1 *"


def param(body: dict[str, Any]) -> CreateAgentInteractionParam:
    return cast(CreateAgentInteractionParam, body)


def executions(client: genai.Client, trigger_id: str) -> list[TriggerExecution]:
    return client.triggers.list_executions(trigger_id).trigger_executions or []


def ended(client: genai.Client, trigger_id: str, count: int) -> list[TriggerExecution] | None:
    found = [each for each in executions(client, trigger_id) if each.status != "in_progress"]
    return found if len(found) >= count else None


def test_each_time_continues_the_last_interaction(beta: genai.Client) -> None:
    made = beta.triggers.create(
        interaction=param({"agent": "echo", "input": "and now?"}), schedule=EVERY_2S, time_zone="Asia/Tokyo"
    )
    try:
        first, second = until(lambda: ended(beta, made.id, 2), timeout=15)[:2]
    finally:
        beta.triggers.update(made.id, status="paused")
    for each in (first, second):
        assert each.status == "completed" and each.trigger_id == made.id and each.error is None
        assert each.scheduled_time is not None and each.start_time is not None and each.end_time is not None
        assert each.scheduled_time.second % 2 == 0 and each.scheduled_time.microsecond == 0
        # fired on time: within a second of its scheduled time
        assert timedelta(0) <= each.start_time - each.scheduled_time < timedelta(seconds=1)
        assert each.id == f"x{int(each.scheduled_time.timestamp() * 1000)}"
    assert second.scheduled_time is not None and first.scheduled_time is not None
    assert second.scheduled_time - first.scheduled_time == timedelta(seconds=2)
    assert first.interaction_id and second.interaction_id and first.interaction_id != second.interaction_id
    later = beta.interactions.get(second.interaction_id)
    assert later.previous_interaction_id == first.interaction_id
    trigger = beta.triggers.get(made.id)
    last = executions(beta, made.id)[-1]
    assert trigger.previous_interaction_id == last.interaction_id
    assert trigger.last_run_time is not None and trigger.consecutive_failure_count == 0


def test_paused_triggers_do_not_fire(beta: genai.Client) -> None:
    made = beta.triggers.create(
        interaction=param({"agent": "echo", "input": "tick"}), schedule="* * * * * *", time_zone="UTC"
    )
    beta.triggers.update(made.id, status="paused")
    before = len(executions(beta, made.id))
    # three of its times pass while it is paused
    with pytest.raises(TimeoutError):
        until(lambda: len(executions(beta, made.id)) > before or None, timeout=3)
    beta.triggers.update(made.id, status="active")
    until(lambda: len(executions(beta, made.id)) > before or None, timeout=5)
    beta.triggers.delete(made.id)


def test_the_failure_limit_moves_a_trigger_to_error(beta: genai.Client) -> None:
    # an interaction to continue, then deleted: each execution's create is refused (404)
    start = interaction(beta.interactions.create(model="echo", input="hello"))
    assert start.id is not None
    made = beta.triggers.create(
        interaction=param({"agent": "echo", "input": "again", "previous_interaction_id": start.id}),
        schedule="* * * * * *",
        time_zone="UTC",
        max_consecutive_failures=2,
    )
    beta.interactions.delete(start.id)
    errored = until(lambda: ((t := beta.triggers.get(made.id)).status == "error" and t) or None, timeout=10)
    assert errored.consecutive_failure_count == 2 and errored.next_run_time is None
    failed = executions(beta, made.id)
    assert [each.status for each in failed] == ["failed", "failed"]
    assert all(each.error and "not found" in each.error for each in failed), failed
    # in error it fires no more, until resumed
    with pytest.raises(TimeoutError):
        until(lambda: len(executions(beta, made.id)) > 2 or None, timeout=2.5)
    resumed = beta.triggers.update(made.id, status="active")
    assert (resumed.status, resumed.consecutive_failure_count) == ("active", 0)
    beta.triggers.delete(made.id)


def test_a_run_past_its_timeout_is_timed_out_and_cancelled(beta: genai.Client) -> None:
    words = " ".join(["slow"] * 200)  # echo-slow: 50 ms a word in the tests, 10 s in all
    made = beta.triggers.create(
        interaction=param({"agent": "echo-slow", "input": words}),
        schedule=YEARLY,
        time_zone="UTC",
        execution_timeout_seconds=1,
    )
    run = beta.triggers.run(made.id)
    assert run.status == "in_progress" and run.interaction_id and run.id.startswith("r")
    assert run.scheduled_time is not None and run.start_time == run.scheduled_time
    timed_out = until(lambda: ended(beta, made.id, 1), timeout=8)[0]
    assert (
        timed_out.status == "timed_out" and timed_out.error and "execution_timeout_seconds" in timed_out.error
    )
    assert beta.interactions.get(run.interaction_id).status == "cancelled"
    assert beta.triggers.get(made.id).consecutive_failure_count == 1


def test_a_time_that_comes_while_the_last_run_goes_is_skipped(beta: genai.Client) -> None:
    words = " ".join(["slow"] * 80)  # 4 s: two of its times come while it runs
    made = beta.triggers.create(
        interaction=param({"agent": "echo-slow", "input": words}), schedule=EVERY_2S, time_zone="UTC"
    )
    try:
        skipped = until(
            lambda: [each for each in executions(beta, made.id) if each.status == "skipped"] or None,
            timeout=10,
        )[0]
    finally:
        beta.triggers.delete(made.id)
    assert skipped.error and "still in progress" in skipped.error and skipped.interaction_id is None


def test_run_now(client: genai.Client) -> None:
    made = client.triggers.create(
        interaction=param({"agent": "echo", "input": "now please"}), schedule=YEARLY, time_zone="UTC"
    )
    run = client.triggers.run(made.id)
    assert run.trigger_id == made.id and run.status == "in_progress" and run.interaction_id
    done = until(lambda: ended(client, made.id, 1), timeout=5)[0]
    assert (done.id, done.status, done.interaction_id) == (run.id, "completed", run.interaction_id)
    assert client.interactions.get(run.interaction_id).status == "completed"
    # a run now leaves the schedule as it was, and the next run continues this one
    trigger = client.triggers.get(made.id)
    assert (
        trigger.next_run_time == made.next_run_time and trigger.previous_interaction_id == run.interaction_id
    )
    again = client.triggers.run(made.id)
    assert again.interaction_id
    assert client.interactions.get(again.interaction_id).previous_interaction_id == run.interaction_id
