"""What the Triggers resource accepts: ids, a create's fields and limits, an update, list paging (pure)."""

from __future__ import annotations

import re
import secrets
from typing import Final

from ..errors import InvalidArgument, TriggerNotFound
from ..sections import TriggerSettings
from .schedule import Schedule

#: an id this server makes: `tr_` and 22 url-safe characters (128 random bits)
_ID: Final = re.compile(r"tr_[A-Za-z0-9_-]{22}")
MAX_DISPLAY_NAME: Final = 512
#: list paging, as the agents' and webhooks' lists page
DEFAULT_PAGE_SIZE: Final = 50
MAX_PAGE_SIZE: Final = 1000
#: what a client may set a trigger's status to; `error` is the server's, reached at the failure limit
SETTABLE_STATUSES: Final = ("active", "paused")
#: a list's `filter`: `status = paused` (or `state`), with or without quotes
_FILTER: Final = re.compile(r"\s*(?:status|state)\s*=\s*\"?(active|paused|error)\"?\s*", re.IGNORECASE)


def new_id() -> str:
    return "tr_" + secrets.token_urlsafe(16)


def is_trigger_id(value: str) -> bool:
    return bool(_ID.fullmatch(value))


def checked_id(value: str) -> str:
    """An id as sent in a path; one that cannot be a trigger's is simply not found."""
    if not is_trigger_id(value):
        raise TriggerNotFound(value)
    return value


def schedule(expression: str | None, zone: str | None, settings: TriggerSettings, now_ms: int) -> Schedule:
    """The schedule of a create: both fields given, valid, and no two times closer than the settings let."""
    if not expression:
        raise InvalidArgument("a trigger needs a cron schedule, such as `0 9 * * *`", "schedule")
    if not zone:
        raise InvalidArgument("a trigger needs an IANA time zone, such as `Europe/Paris`", "time_zone")
    parsed = Schedule(expression, zone)
    gap = parsed.shortest_gap_ms(now_ms)
    if gap < settings.min_interval_seconds * 1000:
        raise InvalidArgument(
            f"runs {gap / 1000:g} s apart at times; the shortest interval this server allows is "
            f"{settings.min_interval_seconds} s",
            "schedule",
        )
    return parsed


def display_name(value: str | None) -> str | None:
    if value is not None and len(value) > MAX_DISPLAY_NAME:
        raise InvalidArgument(f"at most {MAX_DISPLAY_NAME} characters", "display_name")
    return value or None


def environment(value: str | None) -> None:
    """This server runs interactions without a sandbox: only an empty environment_id is accepted."""
    if value:
        raise InvalidArgument(
            "is not supported: this server runs triggers without a sandbox environment (leave it out)",
            "environment_id",
        )


def timeout(value: int | None, settings: TriggerSettings) -> int:
    if value is None or value == 0:
        return settings.execution_timeout_seconds
    if not 0 < value <= settings.max_execution_timeout_seconds:
        raise InvalidArgument(
            f"must be from 1 to {settings.max_execution_timeout_seconds} seconds", "execution_timeout_seconds"
        )
    return value


def failure_limit(value: int | None) -> int:
    """0 (or unset): no limit."""
    if value is None:
        return 0
    if value < 0:
        raise InvalidArgument("must not be negative", "max_consecutive_failures")
    return value


def status(value: str | None) -> str:
    """An update's status ('' to keep it)."""
    if value is None or value == "":
        return ""
    if value not in SETTABLE_STATUSES:
        raise InvalidArgument(
            "may be set to active or paused (error is the server's, once max_consecutive_failures is "
            "reached; set active to resume)",
            "status",
        )
    return value


def update_mask(raw: str | None, given: set[str]) -> set[str]:
    """The fields an update changes: those its mask names (`display_name,status`), else those it sends."""
    if raw is None or raw.strip() in ("", "*"):
        return given if raw is None or raw.strip() == "" else {"display_name", "status"}
    named = {part.strip() for part in raw.split(",") if part.strip()}
    unknown = named - {"display_name", "status"}
    if unknown:
        raise InvalidArgument(
            f"{sorted(unknown)[0]!r} cannot be updated (display_name and status can)", "update_mask"
        )
    return named


def status_filter(raw: str | None) -> str | None:
    """A list's `filter`: None for none, else the status it asks for."""
    if raw is None or raw.strip() == "":
        return None
    matched = _FILTER.fullmatch(raw)
    if matched is None:
        raise InvalidArgument("only `status = active|paused|error` can filter triggers", "filter")
    return matched.group(1).lower()
