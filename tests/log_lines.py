"""Reading the processes' logs in the tests: JSON lines, and a request's access line."""

from __future__ import annotations

import json
from typing import Any

from .support import Process
from .waiting import until


def json_lines(text: str) -> list[dict[str, Any]]:
    """Every line of a log written with LOG_FORMAT=json, parsed; a line that is not a JSON object fails."""
    parsed = []
    for number, line in enumerate(text.splitlines(), 1):
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            raise AssertionError(f"line {number} is not JSON: {line!r}") from None
        assert isinstance(value, dict), f"line {number} is not a JSON object: {line!r}"
        parsed.append(value)
    return parsed


def access_line(process: Process, request_id: str, timeout: float = 5.0) -> dict[str, Any]:
    """The access line of the request `request_id` in a JSON log (access lines are written in batches:
    it may come a moment after the answer)."""

    def found() -> dict[str, Any] | None:
        return next(
            (
                line
                for line in json_lines(process.log())
                if line["logger"] == "server.access" and line.get("request_id") == request_id
            ),
            None,
        )

    return until(found, timeout=timeout)
