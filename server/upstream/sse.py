"""Sans-I/O decoders for streamed HTTP bodies: server-sent events and newline-delimited JSON.

Both are fed raw bytes as they arrive and return the complete messages found so far. Bytes are decoded
incrementally, so a UTF-8 character or a CRLF split across two network reads is handled.
"""

from __future__ import annotations

import codecs
from typing import NamedTuple


class SSEMessage(NamedTuple):
    event: str
    data: str
    id: str | None = None


class SSEDecoder:
    """The WHATWG event-stream format: lines end in CRLF, LF or CR; a blank line ends an event."""

    __slots__ = ("_buffer", "_data", "_event", "_id", "_text")

    def __init__(self) -> None:
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[SSEMessage]:
        self._buffer += self._text.decode(chunk)
        return self._drain(final=False)

    def close(self) -> list[SSEMessage]:
        """End of stream: a last event without its blank line is still delivered (Gemini may end so)."""
        self._buffer += self._text.decode(b"", final=True)
        messages = self._drain(final=True)
        if self._buffer:
            self._line(self._buffer, messages)
            self._buffer = ""
        self._dispatch(messages)
        return messages

    def _drain(self, *, final: bool) -> list[SSEMessage]:
        messages: list[SSEMessage] = []
        buffer = self._buffer
        if "\r" not in buffer:
            # what every provider sends: LF line ends, split in C rather than found one at a time
            *lines, self._buffer = buffer.split("\n")
            for line in lines:
                self._line(line, messages)
            return messages
        start = 0
        while True:
            cr = buffer.find("\r", start)
            lf = buffer.find("\n", start)
            if cr < 0 and lf < 0:
                break
            if cr >= 0 and (lf < 0 or cr < lf):
                # a CR at the very end may be the first half of a CRLF: wait for the next read
                if cr == len(buffer) - 1 and not final:
                    break
                end, skip = cr, 2 if buffer.startswith("\n", cr + 1) else 1
            else:
                end, skip = lf, 1
            self._line(buffer[start:end], messages)
            start = end + skip
        self._buffer = buffer[start:]
        return messages

    def _line(self, line: str, messages: list[SSEMessage]) -> None:
        if not line:
            self._dispatch(messages)
            return
        if line.startswith(":"):
            return  # a comment, used as a keep-alive
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\x00" not in value:
            self._id = value
        # "retry" and unknown fields are ignored, as the spec says

    def _dispatch(self, messages: list[SSEMessage]) -> None:
        if self._data:
            messages.append(SSEMessage(self._event or "message", "\n".join(self._data), self._id))
        self._event = ""
        self._data = []


class LineDecoder:
    """Splits a body into lines (NDJSON); blank lines are skipped."""

    __slots__ = ("_buffer", "_text")

    def __init__(self) -> None:
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""

    def feed(self, chunk: bytes) -> list[str]:
        self._buffer += self._text.decode(chunk)
        *lines, self._buffer = self._buffer.split("\n")
        return [line.rstrip("\r") for line in lines if line.strip()]

    def close(self) -> list[str]:
        rest = (self._buffer + self._text.decode(b"", final=True)).strip()
        self._buffer = ""
        return [rest] if rest else []
