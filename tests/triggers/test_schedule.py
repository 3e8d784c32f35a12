"""A trigger's schedule on the wall clock of its zone (server/triggers/schedule.py), on computed times:
the DST days of two zones, each side of the Atlantic, and what a schedule may say. No server."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from server.errors import InvalidArgument
from server.triggers.schedule import Schedule


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1000)


def utc(values: list[int]) -> list[str]:
    return [datetime.fromtimestamp(v / 1000, UTC).strftime("%Y-%m-%d %H:%M") for v in values]


def between(schedule: Schedule, start: str, end: str) -> list[str]:
    return utc(schedule.times(ms(start), ms(end), 100))


@pytest.mark.parametrize(
    ("zone", "day_before", "after", "expected"),
    [
        # New York springs forward on 8 March 2026 at 02:00 EST: 02:30 does not exist that day, and runs
        # once, at 03:30 EDT (07:30 UTC), the instant 02:30 EST names
        (
            "America/New_York",
            "2026-03-07T12:00:00+00:00",
            "2026-03-10T00:00:00+00:00",
            ["2026-03-08 07:30", "2026-03-09 06:30"],
        ),
        # Berlin springs forward on 29 March 2026 at 02:00 CET: 02:30 runs once, at 03:30 CEST (01:30 UTC)
        (
            "Europe/Berlin",
            "2026-03-28T12:00:00+00:00",
            "2026-03-31T00:00:00+00:00",
            ["2026-03-29 01:30", "2026-03-30 00:30"],
        ),
    ],
)
def test_a_time_in_the_spring_gap_runs_once(
    zone: str, day_before: str, after: str, expected: list[str]
) -> None:
    schedule = Schedule("30 2 * * *", zone)
    assert between(schedule, day_before, after)[:2] == expected


@pytest.mark.parametrize(
    ("zone", "start", "end", "expected"),
    [
        # New York falls back on 1 November 2026: 01:30 happens at 05:30 UTC (EDT) and again at 06:30 UTC
        # (EST); it runs at the first only
        (
            "America/New_York",
            "2026-10-31T12:00:00+00:00",
            "2026-11-02T12:00:00+00:00",
            ["2026-11-01 05:30", "2026-11-02 06:30"],
        ),
        # Berlin falls back on 25 October 2026: 02:30 happens at 00:30 UTC (CEST) and at 01:30 UTC (CET)
        (
            "Europe/Berlin",
            "2026-10-24T12:00:00+00:00",
            "2026-10-26T12:00:00+00:00",
            ["2026-10-25 00:30", "2026-10-26 01:30"],
        ),
    ],
)
def test_a_time_in_the_repeated_hour_runs_once(zone: str, start: str, end: str, expected: list[str]) -> None:
    hour = "1" if zone == "America/New_York" else "2"
    assert between(Schedule(f"30 {hour} * * *", zone), start, end) == expected


def test_an_hourly_schedule_runs_once_in_the_repeated_hour() -> None:
    # 01:00 EDT (05:00 UTC) runs; 01:00 EST (06:00 UTC) is the same wall time again, and does not
    schedule = Schedule("0 * * * *", "America/New_York")
    assert between(schedule, "2026-11-01T04:30:00+00:00", "2026-11-01T08:00:00+00:00") == [
        "2026-11-01 05:00",
        "2026-11-01 07:00",
        "2026-11-01 08:00",
    ]


def test_two_wall_times_placed_at_one_instant_run_once() -> None:
    # on Berlin's spring day 02:30 is placed at 03:30 CEST, which the schedule names too
    schedule = Schedule("30 2,3 * * *", "Europe/Berlin")
    assert between(schedule, "2026-03-28T23:00:00+00:00", "2026-03-29T23:00:00+00:00") == ["2026-03-29 01:30"]


def test_next_after_is_strictly_later_from_inside_the_repeated_hour() -> None:
    schedule = Schedule("30 1 * * *", "America/New_York")
    # 01:15 EST, the second pass of the repeated hour: 01:30 EDT (05:30 UTC) is behind it
    assert utc([schedule.next_after(ms("2026-11-01T06:15:00+00:00"))]) == ["2026-11-02 06:30"]


def test_six_fields_put_seconds_first() -> None:
    schedule = Schedule("*/20 * * * * *", "UTC")
    assert schedule.shortest_gap_ms(ms("2026-01-01T00:00:00+00:00")) == 20_000
    assert schedule.next_after(ms("2026-01-01T00:00:01+00:00")) == ms("2026-01-01T00:00:20+00:00")


@pytest.mark.parametrize(
    ("expression", "zone", "field"),
    [
        ("61 * * * *", "UTC", "schedule"),
        ("* * * *", "UTC", "schedule"),
        ("every day", "UTC", "schedule"),
        ("0 0 30 2 *", "UTC", "schedule"),
        ("0 9 * * *", "Mars/Olympus_Mons", "time_zone"),
        ("0 9 * * *", "../../etc/passwd", "time_zone"),
        ("0 9 * * *", "", "time_zone"),
    ],
)
def test_what_is_refused_names_its_field(expression: str, zone: str, field: str) -> None:
    with pytest.raises(InvalidArgument) as raised:
        Schedule(expression, zone).next_after(0)
    assert raised.value.field == field
