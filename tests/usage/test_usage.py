"""Usage totals (README "Usage"): each interaction counted once, in the step that settles it, read back
through GET /{v}/usage with the official SDK's creates, on the suite's in-process server."""

from __future__ import annotations

import datetime
import time
from typing import Any

import httpx
from google import genai
from google.genai.interactions import InteractionCompletedEvent

from ..metrics_scrape import scrape
from ..replies import all_events, id_of, interaction
from ..support import new_key, sdk

USAGE = "/v1beta/usage"
SLOW = " ".join(f"w{i}" for i in range(60))  # 3 s of echo-slow


def _usage(http: httpx.Client, **params: str) -> dict[str, Any]:
    got = http.get(USAGE, params=params)
    assert got.status_code == 200, got.text
    body: dict[str, Any] = got.json()
    return body


def _tokens(usage: Any) -> tuple[int, int, int]:
    """(input, output, total) of an SDK usage."""
    if usage is None:
        return 0, 0, 0
    given = (usage.total_input_tokens, usage.total_output_tokens, usage.total_tokens)
    return tuple(int(n or 0) for n in given)  # type: ignore[return-value]


def test_each_end_is_counted_once_with_the_usage_the_interactions_hold(
    beta: genai.Client, http: httpx.Client
) -> None:
    create = beta.interactions.create
    ids = [id_of(interaction(create(model="echo", input="one two three")))]
    for event in all_events(create(model="echo", input="four five", stream=True)):
        if isinstance(event, InteractionCompletedEvent):
            assert event.interaction.id
            ids.append(event.interaction.id)
    ids.append(
        id_of(interaction(create(model="echo", input="a b c d", generation_config={"max_output_tokens": 1})))
    )
    slow = interaction(create(model="echo-slow", input=SLOW, background=True))
    time.sleep(0.6)  # its run has begun its model call: a few words are out
    beta.interactions.cancel(id=id_of(slow))
    ids.append(id_of(slow))
    stateless = interaction(create(model="echo", input="six", store=False))

    stored = [beta.interactions.get(id=i) for i in ids]
    assert [s.status for s in stored] == ["completed", "completed", "incomplete", "cancelled"]
    report = _usage(http)
    total = report["total"]
    assert total["interactions"] == {"completed": 3, "incomplete": 1, "cancelled": 1}
    sums = [sum(column) for column in zip(*(_tokens(s.usage) for s in [*stored, stateless]), strict=True)]
    assert [total["input_tokens"], total["output_tokens"], total["total_tokens"]] == sums
    # one model call each (the cancelled one's too: it had begun)
    assert total["model_calls"] == 5
    assert "groups" not in report


async def test_grouped_by_model_day_and_label(base_url: str, api_key: str, http: httpx.Client) -> None:
    client = sdk(base_url, api_key)
    for team, model in (("red", "echo"), ("red", "echo"), ("blue", "echo-slow")):
        await client.aio.interactions.create(model=model, input="x y", labels={"team": team})
    await client.aio.interactions.create(model="echo", input="no label")
    by_model = _usage(http, group_by="model")
    assert {(g["model"], g["interactions"]["completed"]) for g in by_model["groups"]} == {
        ("echo", 3),
        ("echo-slow", 1),
    }
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    by_day = _usage(http, group_by="day", start=today, end=today)
    assert [(g["day"], g["interactions"]) for g in by_day["groups"]] == [(today, {"completed": 4})]
    by_team = _usage(http, group_by="label.team")
    rows = {g.get("label_value"): g for g in by_team["groups"]}
    assert {value: row["interactions"]["completed"] for value, row in rows.items()} == {
        "blue": 1,
        "red": 2,
        None: 1,
    }
    assert sum(row["output_tokens"] for row in rows.values()) == by_team["total"]["output_tokens"]
    assert by_team["group_by"] == "label.team"


def test_tenants_are_apart_and_the_vertex_path_reads_the_same(base_url: str, api_key: str) -> None:
    mine, theirs = sdk(base_url, api_key), sdk(base_url, new_key())
    mine.interactions.create(model="echo", input="mine")
    for _ in range(3):
        theirs.interactions.create(model="echo", input="theirs")
    headers = {"x-goog-api-key": api_key}
    for path in (USAGE, "/v1beta1/projects/p/locations/global/usage"):
        got = httpx.get(base_url + path, headers=headers)
        assert got.status_code == 200, (path, got.text)
        assert got.json()["total"]["interactions"] == {"completed": 1}


def test_a_bad_parameter_is_a_400_naming_it(http: httpx.Client) -> None:
    for params, field in (
        ({"start": "yesterday"}, "start"),
        ({"end": "2026-13-01"}, "end"),
        ({"start": "2026-12-05", "end": "2026-12-01"}, "start"),
        ({"start": "2020-01-01", "end": "2026-01-01"}, "start"),
        ({"end": "2026-12-01T10:00:00"}, "end"),
        ({"group_by": "tenant"}, "group_by"),
        ({"group_by": "label."}, "group_by"),
        ({"group_by": ""}, "group_by"),
    ):
        got = http.get(USAGE, params=params)
        assert got.status_code == 400, (params, got.text)
        error = got.json()["error"]
        assert error["status"] == "INVALID_ARGUMENT" and f"`{field}`" in error["message"], (params, error)


def test_times_are_read_as_their_utc_days(http: httpx.Client, beta: genai.Client) -> None:
    beta.interactions.create(model="echo", input="now")
    today = datetime.datetime.now(datetime.UTC)
    # a time zone far east of UTC: its local date may be tomorrow, its UTC day is today
    east = today.astimezone(datetime.timezone(datetime.timedelta(hours=14))).isoformat()
    got = _usage(http, start=today.date().isoformat(), end=east, group_by="day")
    assert [g["day"] for g in got["groups"]] == [today.date().isoformat()]
    assert got["start"] == got["end"] == today.date().isoformat()


def test_the_prometheus_counters_follow_the_settles(base_url: str, beta: genai.Client) -> None:
    before = scrape(base_url)
    labels = {"model": "echo", "status": "completed", "tenant": ""}
    made = interaction(beta.interactions.create(model="echo", input="count these words"))
    after = scrape(base_url)
    name = "ix_usage_interactions_total"
    assert after.value(name, **labels) >= before.value(name, **labels) + 1
    tokens = {"model": "echo", "kind": "output", "tenant": ""}
    grown = after.value("ix_usage_tokens_total", **tokens) - before.value("ix_usage_tokens_total", **tokens)
    assert grown >= _tokens(made.usage)[1] > 0
