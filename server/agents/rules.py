"""What the Agents resource accepts: ids, fields and list paging (pure)."""

from __future__ import annotations

import re
import secrets
from typing import Any, Final

from ..errors import AgentNotFound, InvalidArgument

#: the agents one API key may have (a constant for now; it will move to the settings)
#: the default of `[agents] max_agents`
MAX_AGENTS: Final = 100
#: an id this server makes: `ag_` and 22 url-safe characters (128 random bits)
_MADE: Final = re.compile(r"ag_[A-Za-z0-9_-]{22}")
#: an id a client chooses (Google's style, `customer-sentinel`): lowercase letters, digits and hyphens,
#: starting with a letter, not ending with a hyphen, at most 63 characters. It cannot look like one of ours.
_CHOSEN: Final = re.compile(r"[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?")
MAX_DESCRIPTION_LENGTH: Final = 4096

#: list paging, as the webhooks page: 50 by default, 1000 at most (more is read as 1000, AIP-158)
DEFAULT_PAGE_SIZE: Final = 50
MAX_PAGE_SIZE: Final = 1000


def new_id() -> str:
    return "ag_" + secrets.token_urlsafe(16)


def is_agent_id(value: str) -> bool:
    return bool(_MADE.fullmatch(value) or _CHOSEN.fullmatch(value))


def checked_id(value: str) -> str:
    """An id as sent to get or delete; one that cannot be an agent's is simply not found."""
    if not is_agent_id(value):
        raise AgentNotFound(value)
    return value


def chosen_id(value: str | None, reserved: set[str]) -> str:
    """The id of a new agent: the client's (checked), or a new one. A configured model or agent name is
    refused: `agent=<that name>` would then mean two things."""
    if value is None or value == "":
        return new_id()
    if not _CHOSEN.fullmatch(value):
        raise InvalidArgument(
            "an agent id is 1 to 63 lowercase letters, digits and hyphens, starting with a letter and not "
            "ending with a hyphen (or leave it out: the server makes one)",
            "id",
        )
    if value in reserved:
        raise InvalidArgument(f"{value!r} is a configured model or agent name: choose another id", "id")
    return value


def description(value: str | None) -> str | None:
    if value is not None and len(value) > MAX_DESCRIPTION_LENGTH:
        raise InvalidArgument(f"at most {MAX_DESCRIPTION_LENGTH} characters", "description")
    return value or None


def base_environment(value: Any) -> None:
    """Agents here run no sandbox: only an empty base_environment is accepted, anything else is refused."""
    if value is None or value == "" or value == {}:
        return
    raise InvalidArgument(
        "is not supported: this server runs agents without a sandbox environment (leave it out)",
        "base_environment",
    )
