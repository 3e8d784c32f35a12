"""The access log: a line per request on logger `server.access` (method, path, the names of the query's
parameters, status, duration, bytes sent, and the request's id, tenant and interaction).

Lines are written in batches: a line waits at most `BATCH_SECONDS` (none after a quiet spell), then is
formatted and written with the others, in one write when the handler is ours (logs.LineHandler). Logged
one at a time as each request ended, a line cost a web process 25-30 µs of CPU under load; in batches, 7-11
µs. Each line keeps the time its request ended. The app's lifespan writes what is left as the process
stops; a process killed outright loses at most the last `BATCH_SECONDS` of lines.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import time
from typing import cast

from . import logs
from .context import RequestContext

access_log = logging.getLogger("server.access")
_NAME = access_log.name

#: the longest path an access line shows (a path can be kilobytes long)
_PATH_LIMIT = 512
#: the longest query parameter name an access line shows
_NAME_LIMIT = 32

#: a request as its line needs it: when it ended, method, raw path, query string, status, bytes sent,
#: duration in ms, its context (not its ASGI scope, which a batch would keep alive with all it holds)
Entry = tuple[float, str, bytes, bytes, int, int, float, RequestContext]


class AccessLog:
    """The access lines of one app (served by one event loop), written in batches."""

    #: how long a line may wait for others to be written with it
    BATCH_SECONDS = 0.05
    #: lines that are written at once, without waiting
    BATCH_LINES = 512

    def __init__(self) -> None:
        self._pending: list[Entry] = []
        self._timer: asyncio.TimerHandle | None = None
        #: when the last batch was written (time.monotonic)
        self._written = 0.0

    @staticmethod
    def enabled() -> bool:
        return access_log.isEnabledFor(logging.INFO)

    def add(self, entry: Entry) -> None:
        self._pending.append(entry)
        if len(self._pending) >= self.BATCH_LINES:
            self.flush()
        elif self._timer is None:
            delay = self._written + self.BATCH_SECONDS - time.monotonic()
            # an empty context: the callback must not keep the first request's context alive
            self._timer = asyncio.get_running_loop().call_later(
                max(delay, 0.0), self.flush, context=contextvars.Context()
            )

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._pending = self._pending, []
        if not batch:
            return
        self._written = time.monotonic()
        handler = logs.direct_handler(access_log)
        if handler is None:
            for entry in batch:
                access_log.handle(_record(entry))
            return
        line = cast(logs.Formatter, handler.formatter).line
        pid = os.getpid()
        handler.write_lines([line(_line(entry, pid)) for entry in batch])


def _line(entry: Entry, pid: int) -> logs.Line:
    ended, method, raw_path, query_string, status, sent, duration_ms, request = entry
    # the path as sent; of the query, the names only (`?key=` is an API key)
    path = raw_path.decode("latin-1")
    if len(path) > _PATH_LIMIT:
        path = path[:_PATH_LIMIT] + "..."
    if not path.isprintable():
        path = path.encode("unicode_escape").decode("ascii")
    query = _query_names(query_string)
    fields = {
        "method": method,
        "path": path,
        "query": query,
        "status": status,
        "duration_ms": round(duration_ms, 3),
        "bytes": sent,
    }
    shown = f"{path}?{'&'.join(query)}" if query else path
    message = f"{method} {shown} {status} {duration_ms:.2f}ms {sent}B"
    return logs.Line(ended, "INFO", _NAME, message, pid, request, fields)


def _record(entry: Entry) -> logging.LogRecord:
    """The line as a LogRecord, for handlers other than ours."""
    line = _line(entry, os.getpid())
    record = logging.LogRecord(_NAME, logging.INFO, __file__, 0, line.message, None, None)
    record.created = line.created
    record.msecs = int((line.created - int(line.created)) * 1000) + 0.0
    record.access = line.fields
    record.ix_request = line.request
    return record


def _query_names(query: bytes) -> list[str]:
    if not query:
        return []
    names = []
    for pair in query.split(b"&")[:32]:
        name = pair.partition(b"=")[0].decode("latin-1")
        if len(name) > _NAME_LIMIT:
            # a parameter's name is short; a long one may be a key sent without its `key=`
            name = f"({len(name)} characters)"
        elif not name.isprintable():
            name = name.encode("unicode_escape").decode("ascii")
        if name and name not in names:
            names.append(name)
    return names
