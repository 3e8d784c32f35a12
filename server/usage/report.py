"""A tenant's usage over days, our extension (README "Usage"): `GET /{v}/usage?start=&end=&group_by=`.

    start, end    days (YYYY-MM-DD, UTC) or RFC 3339 times (their UTC day), both included; by default the
                  30 days up to today; at most MAX_DAYS days
    group_by      model (a model's or an agent's interactions), day, or label.<key> (the interactions by
                  that label's value; those without it in a group of their own); none: the total only

Read from the day hashes the settles add to (store/usage.py); pure.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Final
from urllib.parse import quote, unquote

import msgspec

from ..errors import InvalidArgument
from ..store.usage import AMOUNTS, STATUS_PREFIX

MAX_DAYS: Final = 400
DEFAULT_DAYS: Final = 30
_GROUPS: Final = ("model", "day", "label.<key>")
_LABEL: Final = "label."


class Query(msgspec.Struct, frozen=True):
    start: datetime.date
    end: datetime.date
    #: model, day, label; None: the total only
    group_by: str | None = None
    #: the label's key, for label
    label_key: str = ""

    def days(self) -> list[str]:
        count = (self.end - self.start).days + 1
        return [(self.start + datetime.timedelta(days=n)).isoformat() for n in range(count)]


class Row(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What a group of interactions used. The group's name is the one field of the first four that is set
    (in a label's group, `label_value` null is the interactions without that label)."""

    model: str | None = None
    agent: str | None = None
    day: str | None = None
    label_value: str | None = None
    #: interactions by the status they ended with
    interactions: dict[str, int] = msgspec.field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    thought_tokens: int = 0
    total_tokens: int = 0
    model_calls: int = 0


class Report(msgspec.Struct, kw_only=True, omit_defaults=True):
    start: str
    end: str
    group_by: str | None = None
    total: Row
    groups: list[Row] | None = None


def query(params: Mapping[str, str], today: datetime.date) -> Query:
    """The report asked for; a 400 naming the parameter for what cannot be read."""
    end = _day(params["end"], "end") if "end" in params else today
    start = (
        _day(params["start"], "start") if "start" in params else end - datetime.timedelta(DEFAULT_DAYS - 1)
    )
    if start > end:
        raise InvalidArgument(f"{start} is after end ({end})", "start")
    if (end - start).days >= MAX_DAYS:
        raise InvalidArgument(f"covers more than {MAX_DAYS} days", "start")
    group_by = params.get("group_by")
    if group_by is None or group_by in ("model", "day"):
        return Query(start=start, end=end, group_by=group_by)
    if group_by.startswith(_LABEL) and len(group_by) > len(_LABEL):
        return Query(start=start, end=end, group_by="label", label_key=group_by[len(_LABEL) :])
    raise InvalidArgument(f"expected one of {', '.join(_GROUPS)}, got {group_by[:64]!r}", "group_by")


def _day(value: str, name: str) -> datetime.date:
    try:
        if len(value) == 10:
            return datetime.date.fromisoformat(value)
        moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgument(
            f"expected a day (YYYY-MM-DD) or an RFC 3339 time, got {value[:64]!r}", name
        ) from None
    if moment.tzinfo is None:
        raise InvalidArgument(f"{value[:64]!r} names no time zone (add Z or an offset)", name)
    return moment.astimezone(datetime.UTC).date()


def report(asked: Query, days: Mapping[str, Mapping[str, int]]) -> Report:
    """The report of `days` (each day's counts, `<group>|<what>` -> n, as the settles wrote them)."""
    total = Row()
    groups: dict[str, Row] = {}
    label_prefix = f"l:{quote(asked.label_key, safe='')}=" if asked.group_by == "label" else ""
    for day, counts in sorted(days.items()):
        for field, n in counts.items():
            tag, _, what = field.rpartition("|")
            if tag == "all":
                _add(total, what, n)
                if asked.group_by == "day":
                    _add(groups.setdefault(day, Row(day=day)), what, n)
            elif asked.group_by == "model" and tag[:2] in ("m:", "a:"):
                _add(groups.setdefault(tag, _model_row(tag)), what, n)
            elif label_prefix and tag.startswith(label_prefix):
                value = unquote(tag[len(label_prefix) :])
                _add(groups.setdefault(tag, Row(label_value=value)), what, n)
    rows = [groups[key] for key in sorted(groups)]
    if asked.group_by == "label":
        rows += _unlabelled(total, rows)
    return Report(
        start=asked.start.isoformat(),
        end=asked.end.isoformat(),
        group_by=asked.group_by if asked.group_by != "label" else _LABEL + asked.label_key,
        total=total,
        groups=rows if asked.group_by else None,
    )


def _model_row(tag: str) -> Row:
    name = unquote(tag[2:])
    return Row(model=name) if tag.startswith("m:") else Row(agent=name)


_FIELDS: Final = dict(
    zip(
        AMOUNTS,
        ("input_tokens", "output_tokens", "cached_tokens", "thought_tokens", "total_tokens", "model_calls"),
        strict=True,
    )
)


def _add(row: Row, what: str, n: int) -> None:
    if what.startswith(STATUS_PREFIX):
        status = what[len(STATUS_PREFIX) :]
        row.interactions[status] = row.interactions.get(status, 0) + n
    elif (name := _FIELDS.get(what)) is not None:
        setattr(row, name, getattr(row, name) + n)


def _unlabelled(total: Row, labelled: list[Row]) -> list[Row]:
    """The interactions without the label: the total less the labelled (each has one value at most)."""
    rest = Row(label_value=None)
    for status, n in total.interactions.items():
        left = n - sum(row.interactions.get(status, 0) for row in labelled)
        if left:
            rest.interactions[status] = left
    for name in _FIELDS.values():
        setattr(rest, name, getattr(total, name) - sum(getattr(row, name) for row in labelled))
    return [rest] if rest.interactions else []
