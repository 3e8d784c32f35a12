"""When a trigger runs: its cron `schedule` read by croniter on the wall clock of its IANA `time_zone`
(zoneinfo), mapped to instants (ms since the epoch). Pure: no clock of its own, so the DST days are
tested with computed times.

A schedule is walked on the zone's wall clock, as cron itself walks it, and each wall time is then placed:

- a wall time that does not exist (the hour skipped on a spring-forward day, `30 2 * * *` on such a day)
  runs at the instant it names with the offset from before the change (02:30 EST is 03:30 EDT): once,
  late by the gap, never dropped;
- a wall time that exists twice (the hour repeated in autumn) runs at its first instant only, so a daily
  01:30 runs once, and an hourly schedule does not run twice in the repeated hour;
- two wall times placed at one instant (02:30 placed at 03:30, and 03:30 itself) run once.

Five fields are standard cron (minute hour day month weekday) and Google's "standard cron format"; six
fields put seconds first (Quartz's order), this server's extension, which `[triggers]
min_interval_seconds` (60 by default) refuses unless an operator lowers it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterError, croniter

from ..errors import InvalidArgument

#: a schedule's shortest gap is measured over this many of its next times
GAP_SAMPLE: Final = 100
#: a schedule with no time within this many years (`0 0 30 2 *`) is refused: it would never run
_MAX_YEARS: Final = 5


def zone_of(name: str, field: str = "time_zone") -> ZoneInfo:
    """An IANA zone (`Europe/Paris`, `UTC`); anything else is a 400 naming `field`."""
    if not name or name.startswith(("/", ".")) or ".." in name:
        raise InvalidArgument(f"{name[:64]!r} is not an IANA time zone (such as Europe/Paris)", field)
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidArgument(
            f"{name[:64]!r} is not an IANA time zone (such as Europe/Paris)", field
        ) from None


class Schedule:
    """A cron expression in a zone; `next_after` is the instant it runs next."""

    def __init__(self, expression: str, zone: str) -> None:
        self.expression = " ".join(expression.split())
        self.zone = zone_of(zone)
        self.seconds = len(self.expression.split()) == 6
        fields = len(self.expression.split())
        if fields not in (5, 6) and not self.expression.startswith("@"):
            raise InvalidArgument(
                "a cron expression has 5 fields (minute hour day month weekday), or 6 with seconds first",
                "schedule",
            )
        if not croniter.is_valid(self.expression, second_at_beginning=self.seconds):
            raise InvalidArgument(f"{self.expression[:64]!r} is not a valid cron expression", "schedule")

    def _walk(self, wall: datetime) -> croniter:
        return croniter(
            self.expression,
            wall,
            second_at_beginning=self.seconds,
            max_years_between_matches=_MAX_YEARS,
        )

    def next_after(self, ms: int) -> int:
        """The first instant this schedule runs that is later than `ms`."""
        instant = datetime.fromtimestamp(ms / 1000, UTC)
        wall = instant.astimezone(self.zone)
        hour_ago = (instant - timedelta(hours=1)).astimezone(self.zone)
        if hour_ago.utcoffset() != wall.utcoffset():
            # the clock changed within the hour: from an hour back on the wall clock, so that a skipped
            # wall time placed after the gap is not passed over, and an instant of the repeated hour's
            # second pass passes over the times placed before it (below)
            wall = wall - timedelta(hours=1)
        walk = self._walk(wall.replace(tzinfo=None))
        try:
            while True:
                placed = self._placed(walk.get_next(datetime))
                if placed > ms:
                    return placed
        except CroniterError:
            raise InvalidArgument(f"{self.expression[:64]!r} never runs", "schedule") from None

    def _placed(self, wall: datetime) -> int:
        """The instant of a wall time: its first (fold 0); one that does not exist is read with the offset
        from before the gap, which places it after the gap."""
        local = wall.replace(tzinfo=self.zone, fold=0)
        return int(local.astimezone(UTC).timestamp() * 1000)

    def times(self, after_ms: int, until_ms: int, most: int) -> list[int]:
        """Up to `most` instants it runs in (after_ms, until_ms], earliest first."""
        found: list[int] = []
        at = after_ms
        while len(found) < most:
            at = self.next_after(at)
            if at > until_ms:
                break
            found.append(at)
        return found

    def shortest_gap_ms(self, from_ms: int) -> int:
        """The shortest gap between two of its next GAP_SAMPLE times (ms)."""
        at, gap = self.next_after(from_ms), None
        for _ in range(GAP_SAMPLE):
            later = self.next_after(at)
            gap = later - at if gap is None else min(gap, later - at)
            at = later
        assert gap is not None
        return gap
