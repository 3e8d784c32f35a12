"""SSE framing. Events are framed once, when made, and the frames are what the log stores and the
streams send, so a relay never re-encodes."""

from __future__ import annotations

import msgspec

from ..errors import UNAVAILABLE_MESSAGE
from .base import dec_hook
from .codec import json_encoder
from .events import AnyEvent, ErrorEvent, Event
from .interaction import ErrorInfo

KEEPALIVE = b": keep-alive\n\n"
_TERMINAL_PREFIXES = (b"event: interaction.completed\n", b"event: error\n")

HEADERS = {
    "Cache-Control": "no-cache",
    "Connection": "keep-alive",
    # nginx and similar proxies buffer responses unless told not to
    "X-Accel-Buffering": "no",
}


def frame(event: Event) -> bytes:
    tag = type(event).__struct_config__.tag
    return b"event: " + str(tag).encode() + b"\ndata: " + json_encoder.encode(event) + b"\n\n"


_decoder = msgspec.json.Decoder(AnyEvent, dec_hook=dec_hook)


def parse(frame_bytes: bytes) -> AnyEvent:
    """The event of one of our frames (the inverse of `frame`): what a dialect's renderer reads."""
    _event, _, data = frame_bytes.partition(b"\ndata: ")
    return _decoder.decode(data)


def unavailable_frame() -> bytes:
    """The end of a stream whose events cannot be read or written because Redis is away."""
    return frame(ErrorEvent(error=ErrorInfo(code="unavailable", message=UNAVAILABLE_MESSAGE)))


def is_terminal(frame_bytes: bytes) -> bool:
    """The last event of a run: the stream closes after it."""
    return frame_bytes.startswith(_TERMINAL_PREFIXES)


#: ids of events in an interaction's log (`evt_<n>`, entry `0-<n>`), and of events rebuilt from its record
#: once the log is gone (`evr_<n>`): the two numberings differ, so a resume never mixes them up
LOGGED = "evt"
REBUILT = "evr"


def event_id(seq: int, kind: str = LOGGED) -> str:
    return f"{kind}_{seq}"


def parse_event_id(value: str) -> tuple[str, int] | None:
    """(kind, sequence number) of one of our event ids, or None."""
    kind, _, number = value.partition("_")
    # isdigit() alone takes any script's digits ("٣"), which int() then reads
    if kind not in (LOGGED, REBUILT) or not (number.isascii() and number.isdigit()):
        return None
    return kind, int(number)
