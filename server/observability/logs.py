"""One log format for every process: readable text by default, one JSON object per line with
`LOG_FORMAT=json`.

`configure(kind, format, level)` is called once at the start of `python -m server` (the launcher) and of
`python -m workers`. The web processes are configured by granian, from `dictconfig("web", ...)` that the
launcher hands it: granian runs that configuration in the launcher and again in each web process it forks,
so its own lines, litestar's and ours come out alike. Every line carries the process's kind and pid and,
inside a request, the request's id, tenant and interaction (context.py).
"""

from __future__ import annotations

import logging
import logging.config
import os
import re
import sys
import time
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TextIO

import msgspec

from . import context

FORMATS: Final = ("text", "json")
LEVELS: Final = ("debug", "info", "warning", "error", "critical")
#: the variables the entry points read before their settings are loaded (see `configure_early`)
FORMAT_ENV: Final = "LOG_FORMAT"
LEVEL_ENV: Final = "LOG_LEVEL"

_json = msgspec.json.Encoder()
#: the formatter of this process, once configured: `console` and `render` follow its format
_active: Formatter | None = None


class Line(NamedTuple):
    """What a log line says, from a LogRecord or made directly (an access line, see access.py)."""

    created: float
    level: str
    logger: str
    message: str
    pid: int | None
    request: context.RequestContext | None
    #: more fields, in the JSON format only (the text's message says them)
    fields: dict[str, Any] | None = None
    exception: str | None = None


class Formatter(logging.Formatter):
    format_name = "text"

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        #: (second, its ISO text): strftime once a second rather than on every line
        self._second: tuple[int, str] = (-1, "")

    def format(self, record: logging.LogRecord) -> str:
        request: context.RequestContext | None = record.__dict__.get("ix_request")
        return self.line(
            Line(
                record.created,
                record.levelname,
                record.name,
                record.getMessage(),
                record.process,
                # an access line is written after its request, outside its context: it names it
                request if request is not None else context.current(),
                record.__dict__.get("access"),
                self.exception_text(record),
            )
        )

    def line(self, line: Line) -> str:
        raise NotImplementedError

    def timestamp(self, created: float) -> str:
        second = int(created)
        cached = self._second
        if cached[0] != second:
            cached = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
            self._second = cached
        return f"{cached[1]}.{int((created - second) * 1000):03d}Z"

    def exception_text(self, record: logging.LogRecord) -> str | None:
        text = None
        if record.exc_info:
            if not record.exc_text:
                record.exc_text = self.formatException(record.exc_info)
            text = record.exc_text
        if record.stack_info:
            stack = self.formatStack(record.stack_info)
            text = f"{text}\n{stack}" if text else stack
        return text


class TextFormatter(Formatter):
    """`2026-05-20T10:00:00.123Z INFO    server.access [web 4242] POST /v1beta/interactions 200 ...
    request_id=... tenant=...`, with a traceback on the lines after."""

    def line(self, line: Line) -> str:
        text = (
            f"{self.timestamp(line.created)} {line.level:<7} {line.logger} [{self.kind} {line.pid}] "
            f"{line.message}"
        )
        request = line.request
        if request is not None:
            text += f" request_id={request.request_id}"
            if request.tenant is not None:
                text += f" tenant={request.tenant}"
            if request.interaction_id is not None:
                text += f" interaction_id={request.interaction_id}"
        return f"{text}\n{line.exception}" if line.exception else text


class JsonFormatter(Formatter):
    """One JSON object per line: time (ISO 8601, UTC), level, logger, message, process, pid, the request's
    request_id, tenant and interaction_id when set, an access line's fields, exc_info as text."""

    format_name = "json"

    def line(self, line: Line) -> str:
        out: dict[str, Any] = {
            "time": self.timestamp(line.created),
            "level": line.level,
            "logger": line.logger,
            "message": line.message,
            "process": self.kind,
            "pid": line.pid,
        }
        request = line.request
        if request is not None:
            out["request_id"] = request.request_id
            if request.tenant is not None:
                out["tenant"] = request.tenant
            if request.interaction_id is not None:
                out["interaction_id"] = request.interaction_id
        if line.fields is not None:
            out.update(line.fields)
        if line.exception:
            out["exc_info"] = line.exception
        return _json.encode(out).decode()


if TYPE_CHECKING:
    _StreamHandler = logging.StreamHandler[TextIO]
else:
    _StreamHandler = logging.StreamHandler


class LineHandler(_StreamHandler):
    """Our handler (a StreamHandler to stderr) that also writes many lines at once: an access batch."""

    def write_lines(self, lines: list[str]) -> None:
        text = "\n".join(lines) + "\n"
        self.acquire()
        try:
            self.stream.write(text)
            self.flush()
        finally:
            self.release()


def direct_handler(logger: logging.Logger) -> LineHandler | None:
    """The handler that `logger`'s INFO lines all go to when it is ours alone with our formatter, nothing
    filtering on the way: they may then be formatted and written directly. None otherwise (a test's
    capture, an operator's own configuration): they go through logging, line by line."""
    found: list[logging.Handler] = []
    current: logging.Logger | None = logger
    while current is not None:
        if current.filters or current.disabled:
            return None
        found += [handler for handler in current.handlers if handler.level <= logging.INFO]
        current = current.parent if current.propagate else None
    if len(found) != 1:
        return None
    handler = found[0]
    if not isinstance(handler, LineHandler) or handler.filters:
        return None
    return handler if isinstance(handler.formatter, Formatter) else None


def formatter(kind: str, format_name: str, parent_pid: int | None = None) -> Formatter:
    """dictConfig's factory for our formatter, in every process that applies the configuration.

    The configuration handed to granian is applied both in the launcher and in the web processes it forks:
    the process that made it (`parent_pid`) is the launcher, any other one is a `kind` process.
    """
    global _active
    _lighter_records()
    # a library's warnings.warn comes out in the same format (the web processes get here through granian)
    logging.captureWarnings(True)
    own_kind = "launcher" if parent_pid == os.getpid() else kind
    made = JsonFormatter(own_kind) if format_name == "json" else TextFormatter(own_kind)
    _active = made
    return made


def _lighter_records() -> None:
    """Skip what a LogRecord computes that no line shows: the caller's frame (a walk of the stack on every
    call), the thread's and multiprocessing's process names: a quarter of a log call's cost."""
    logging.logThreads = False
    logging.logMultiprocessing = False
    # logging's documented switch: "Setting _srcfile to None will prevent findCaller() from being called"
    logging._srcfile = None


def dictconfig(kind: str, format_name: str, level: str, *, parent_pid: int | None = None) -> dict[str, Any]:
    """The logging configuration of a process of this `kind` (granian's `log_dictconfig` takes it too)."""
    level_name = level.upper()
    factory = f"{__name__}.formatter"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "ix": {"()": factory, "kind": kind, "format_name": format_name, "parent_pid": parent_pid}
        },
        "handlers": {
            "ix": {"class": f"{__name__}.LineHandler", "formatter": "ix", "stream": "ext://sys.stderr"}
        },
        "loggers": {
            # granian's own (its Rust side logs through it too), and its access log, which stays off: ours
            # (server.access) knows the request id
            "_granian": {"level": level_name, "propagate": True},
            "granian.access": {"level": "CRITICAL", "propagate": False},
            # arq logs every job at INFO
            "arq": {"level": max(logging.WARNING, logging.getLevelName(level_name))},
        },
        "root": {"level": level_name, "handlers": ["ix"]},
    }


def configure(kind: str, format_name: str = "text", level: str = "info") -> None:
    logging.config.dictConfig(dictconfig(kind, format_name, level))


def configure_early(kind: str) -> None:
    """Before the settings are loaded (their own warnings are logged): the format and level of the
    environment, the defaults for a value that is wrong there (loading the settings then refuses it)."""
    format_name = os.environ.get(FORMAT_ENV, "").lower()
    level = os.environ.get(LEVEL_ENV, "").lower()
    configure(kind, format_name if format_name in FORMATS else "text", level if level in LEVELS else "info")


def console(level: int, message: str) -> None:
    """A command's own message at its start (`error: ...`, `warning: ...`): a plain line in the text
    format, as a command line tool prints it, and a log record in the JSON format, so that every line a
    JSON process writes parses."""
    if json_format():
        logging.getLogger("server").log(level, "%s", message)
    else:
        print(f"{logging.getLevelName(level).lower()}: {message}", file=sys.stderr, flush=True)


def json_format() -> bool:
    return _active is not None and _active.format_name == "json"


def render(name: str, message: str, pid: int) -> str:
    """One INFO line for `name`, as this process's handler would write it, without the handler: for a
    forked child that must take no lock (a lock held at the fork would be held for ever)."""
    return (_active or TextFormatter("launcher")).line(Line(time.time(), "INFO", name, message, pid, None))


_USERINFO_PASSWORD = re.compile(r"(?<=//)([^/@:]*):[^/@]*@")
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&]*")


def redact_url(url: str) -> str:
    """A Redis URL with its password replaced, for a log line (`redis://:secret@host` or `?password=`)."""
    return _QUERY_PASSWORD.sub(r"\1***", _USERINFO_PASSWORD.sub(r"\1:***@", url))
