"""Each tenant's limits as server.toml says now: [auth.limits] for every tenant, and a tenant's own
[auth.tenant_limits.<tenant>] field by field over it.

Every process (web and worker) looks at the file once a second (`Watcher`: a stat, no read unless it
changed) and applies its new limits at once, so an operator changes a limit without a restart. A file that
no longer loads keeps the limits in force, with the error logged; the rest of the file's changes (a new
key, another section) still need a restart, as the log line says.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path

from ..config_errors import ConfigError
from ..sections import AuthSettings, Limits
from ..store.limits import TenantLimits

log = logging.getLogger(__name__)

#: how often the file is looked at (s)
WATCH_SECONDS = 1.0


def _merged(own: Limits, default: Limits) -> TenantLimits:
    names = TenantLimits.__struct_fields__
    return TenantLimits(
        **{
            name: value if (value := getattr(own, name)) is not None else (getattr(default, name) or 0)
            for name in names
        }
    )


class LimitsTable:
    __slots__ = ("_by_tenant", "_default", "auth")

    def __init__(self, auth: AuthSettings) -> None:
        self.auth = auth
        self._default = _merged(auth.limits, Limits())
        self._by_tenant = {tenant: _merged(own, auth.limits) for tenant, own in auth.tenant_limits.items()}

    def of(self, tenant: str) -> TenantLimits:
        return self._by_tenant.get(tenant, self._default)


class Watcher:
    """A new table of limits whenever server.toml's change (`on_change` is told it)."""

    def __init__(
        self,
        table: LimitsTable,
        path: Path,
        load: Callable[[], AuthSettings],
        on_change: Callable[[LimitsTable], None],
    ) -> None:
        self.table = table
        self.path = path
        self.load = load
        #: told each new table
        self.on_change = on_change
        self.seen = _stamp(path)

    async def run(self) -> None:
        while True:
            await asyncio.sleep(WATCH_SECONDS)
            try:
                self.check()
            except Exception:  # a bug here must not end the watch for the process's life
                log.exception("looking at %s for changed limits failed: the limits in force stay", self.path)

    def check(self) -> None:
        stamp = _stamp(self.path)
        if stamp == self.seen:
            return
        self.seen = stamp
        if stamp is None:
            # gone (or being replaced, not in one rename): its built-in defaults are not what it said
            log.error("%s is gone: the limits in force stay until it is back", self.path.name)
            return
        try:
            auth = self.load()
        except (ConfigError, OSError) as exc:
            log.error("%s changed but does not load (%s): the limits in force stay", self.path.name, exc)
            return
        now, was = (auth.limits, auth.tenant_limits), (self.table.auth.limits, self.table.auth.tenant_limits)
        if now != was:
            self.table = LimitsTable(auth)
            self.on_change(self.table)
            log.info("%s changed: its [auth] limits apply now (other changes need a restart)", self.path.name)


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """What tells a changed file: its inode (an editor's save replaces it), size and modification time."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_ino, found.st_size, found.st_mtime_ns
