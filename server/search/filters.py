"""A search filter, as a list request's query parameters or a delete-by-filter request's body give it, and
the store query it becomes. Every bad value is a 400 naming its parameter."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Annotated

import msgspec

from ..errors import InvalidArgument
from ..protocol import lifecycle
from ..protocol import status as st
from ..store import search_tags
from ..store.search import Query

#: a value a filter compares with: never empty (a query parameter left empty is no filter)
Given = Annotated[str, msgspec.Meta(min_length=1)]
#: one or more of the statuses clients see, comma-separated
STATUS_PATTERN = "^({0})(,({0}))*$".format("|".join(sorted(st.SHOWN)))
#: what a status a client filters by matches besides itself: the states shown as it (lifecycle.wire_status)
_ALSO: dict[str, frozenset[str]] = {
    st.CANCELLED: frozenset({lifecycle.CANCELLING}),
    st.IN_PROGRESS: frozenset({st.QUEUED}),
}
Statuses = Annotated[str, msgspec.Meta(pattern=STATUS_PATTERN)]
Moment = Annotated[str, msgspec.Meta(min_length=1, extra_json_schema={"format": "date-time"})]


class Filter(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """Every field narrows the match; all of them together are ANDed."""

    #: each label must be there with this value
    labels: dict[Given, str] = {}
    #: one of these statuses, comma-separated (as clients see them: `cancelled` covers a cancel under way,
    #: `in_progress` a background run no worker has taken yet)
    status: Statuses | None = None
    model: Given | None = None
    agent: Given | None = None
    #: RFC 3339: created at or after it
    created_after: Moment | None = None
    #: RFC 3339: created before it
    created_before: Moment | None = None
    #: only the first turn of each conversation
    roots_only: bool = False

    def is_empty(self) -> bool:
        return self == Filter()


_KNOWN = {"status", "model", "agent", "created_after", "created_before", "roots_only"}


def from_query(params: Mapping[str, str], ignored: set[str]) -> Filter:
    """The filter of a list request; parameters in `ignored` (paging, views, the key) are not filters,
    and any other parameter is a 400 rather than a filter silently not applied."""
    labels: dict[str, str] = {}
    values: dict[str, str] = {}
    for name, value in params.items():
        label = _label(name)
        if label:
            labels[label] = value
        elif name in _KNOWN:
            if not value:
                raise InvalidArgument("is empty (leave the parameter out to match any)", name)
            values[name] = value
        elif name not in ignored:
            raise InvalidArgument(
                "not a filter of this list (labels.<key>, " + ", ".join(sorted(_KNOWN)) + ")", name
            )
    roots_only = values.pop("roots_only", "false").lower()
    if roots_only not in ("true", "false", "1", "0"):
        raise InvalidArgument(f"Expected true or false, got {roots_only[:32]!r}", "roots_only")
    return Filter(labels=labels, roots_only=roots_only in ("true", "1"), **values)


def _label(name: str) -> str | None:
    """The label key of a parameter `labels.<key>` (or OpenAPI's deepObject form, `labels[<key>]`)."""
    if name.startswith("labels.") and len(name) > len("labels."):
        return name[len("labels.") :]
    if name.startswith("labels[") and name.endswith("]") and len(name) > len("labels[]"):
        return name[len("labels[") : -1]
    return None


def to_query(given: Filter, field_prefix: str = "") -> Query:
    """`field_prefix`: where the filter is in the request, for the errors' field names (`filter.`)."""
    after = _moment(given.created_after, field_prefix + "created_after")
    before = _moment(given.created_before, field_prefix + "created_before")
    return Query(
        tags=search_tags.wanted(
            labels=given.labels, model=given.model, agent=given.agent, roots_only=given.roots_only
        ),
        statuses=_states(given.status, field_prefix + "status"),
        after_ms=after,
        before_ms=None if before is None else before - 1,
    )


def _states(raw: str | None, field: str) -> frozenset[str]:
    """The lifecycle states of the statuses asked for: an item matches the status it shows. `queued` is
    refused: no interaction shows it (a filter that matched what it never shows would be a lie)."""
    if not raw:
        return frozenset()
    states: set[str] = set()
    for name in (part.strip() for part in raw.split(",")):
        if name == st.QUEUED:
            raise InvalidArgument(
                "'queued' is not a status interactions show: a background run waiting for a worker is "
                "'in_progress', as Google's API answers (filter by that)",
                field,
            )
        if name not in st.SHOWN:
            raise InvalidArgument(f"{name[:32]!r} is not a status ({', '.join(sorted(st.SHOWN))})", field)
        states.add(name)
        states.update(_ALSO.get(name, ()))
    return frozenset(states)


def _moment(raw: str | None, field: str) -> int | None:
    """RFC 3339 (a zone is required) as epoch ms."""
    if not raw:
        return None
    try:
        moment = datetime.datetime.fromisoformat(raw)
    except ValueError:
        raise InvalidArgument(f"{raw[:40]!r} is not an RFC 3339 time (2026-06-01T12:00:00Z)", field) from None
    if moment.tzinfo is None:
        raise InvalidArgument(f"{raw[:40]!r} has no time zone (end it with Z or +hh:mm)", field)
    return int(moment.timestamp() * 1000)
