"""What an operator does to a running server's limits: edit its server.toml (README, "Limits"), which every
process reads again within a second."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import msgspec

from server.limits.table import WATCH_SECONDS

from ..support import toml_of

#: how long a test waits for every process to have read the edited file
APPLIED_SECONDS = WATCH_SECONDS * 2 + 0.3


def set_limits(config: Path, tenant: str, **limits: int) -> None:
    """`limits` as `tenant`'s own ([auth.tenant_limits.<tenant>], none: its entry removed), the file
    replaced whole as an editor saves it; returns once every process has read it."""
    raw: dict[str, Any] = msgspec.toml.decode(config.read_bytes())
    own = raw.setdefault("auth", {}).setdefault("tenant_limits", {})
    if limits:
        own[tenant] = limits
    else:
        own.pop(tenant, None)
    write(config, toml_of(raw))


def write(config: Path, text: str) -> None:
    edited = config.with_name(config.name + ".edited")
    edited.write_text(text)
    edited.replace(config)
    time.sleep(APPLIED_SECONDS)
