"""Runs of text deltas framed at once: what the Responses stream (events.py) costs per event.

A relay that its client keeps busy hands the renderer thousands of our frames at a time, and nearly all of
them are text deltas of one part. Framed one by one, each costs a decode and five pieces of a join (about
0.9 µs); framed as a run, the run is cut at its frames' boundaries by one compiled pattern (the end of one
text delta frame and the start of the next, as sse.frame writes them), which leaves each text's JSON as it
came, and all their Responses frames are made in one join (about 0.3 µs a frame, measured on 2,000-frame
runs; a decode of the run as one JSON array took 0.55). Anything else in the run leaves a raw newline in a
piece (a JSON string has none), and the renderer then frames it one by one.
Pure: no state of its own; events.Renderer decides when a run is tried.
"""

from __future__ import annotations

import functools
import re
from itertools import repeat
from typing import Final

import msgspec

from ...protocol import sse
from ...protocol.deltas import TextDelta
from ...protocol.events import StepDelta
from .stream_wire import TEXT_HEAD, TEXT_TAIL

DELTA_FRAME: Final = b"event: step.delta\n"
#: where a delta frame's data starts
DATA_AT: Final = len(DELTA_FRAME + b"data: ")
#: the start of a delta frame after another frame
NEXT_DELTA_FRAME: Final = b"\n\n" + DELTA_FRAME
#: the fewest frames a run is tried on: for fewer, its cut and its join cost more than the frames one
#: by one (measured: 2.7 µs a frame for runs of one, against 1.3 µs; equal at about ten)
SHORTEST_RUN: Final = 8
SHORTEST_RUN_BYTES: Final = SHORTEST_RUN * len(sse.frame(StepDelta(index=0, delta=TextDelta(text="x"))))
_EMPTY_TEXT: Final = b'""'
#: between two text deltas' Responses frames: the end of one, the start of the next
_TAIL_HEAD: Final = TEXT_TAIL + TEXT_HEAD


#: an event id as sse.event_id makes them (`evt_12`, `evr_3`), in a frame's data
_EVENT_ID: Final = rb"[a-z]+_[0-9]+"


@functools.lru_cache(maxsize=64)
def _shape(index: int) -> tuple[re.Pattern[bytes], re.Pattern[bytes]]:
    """Text delta frames of step `index` as sse.frame writes them: the pattern of what comes before a
    text's JSON (with or without an event id), and that of what follows it (the end of its data) up to
    the next such frame's text or the run's end. Regular expressions, as the ids differ (and bytes.split
    spends four times as long on a needle this long: measured)."""
    some_id = sse.event_id(0)
    frame = sse.frame(StepDelta(index=index, delta=TextDelta(text=""), event_id=some_id))
    head, end = frame[: frame.index(_EMPTY_TEXT)], frame[frame.index(_EMPTY_TEXT) + len(_EMPTY_TEXT) :]
    id_field = b'"event_id":%s,' % msgspec.json.encode(some_id)
    before, after = head.split(id_field)
    any_id = re.escape(id_field).replace(re.escape(some_id.encode()), _EVENT_ID)
    heads = b"%s(?:%s)?%s" % (re.escape(before), any_id, re.escape(after))
    return re.compile(heads), re.compile(b"%s(?:%s|\\Z)" % (re.escape(end), heads))


class Framed(msgspec.Struct, gc=False):
    #: the Responses frames, numbered from the run's first number
    frames: bytes
    #: the texts' JSON, each followed by a comma (open_item.OpenItem.raws)
    texts: bytes
    count: int


def span(chunk: bytes, part_open: bool) -> tuple[int, int] | None:
    """Where a run may be in `chunk`: from its first delta frame (its second, when the text part is not
    open yet: the first opens it) to the end of its last; None for a chunk too short to have one."""
    if len(chunk) < SHORTEST_RUN_BYTES:
        return None
    start = chunk.find(DELTA_FRAME)
    last = chunk.rfind(NEXT_DELTA_FRAME, start) if start >= 0 else -1
    if last < 0:
        return None
    end = chunk.find(b"\n\n", last + 2) + 2
    if not part_open:
        start = chunk.find(b"\n\n", start) + 2
    return (start, end) if end - start >= SHORTEST_RUN_BYTES else None


def frame_run(run: bytes, index: int, fields: bytes, first: int) -> Framed | None:
    """`run` (whole frames from a delta frame to a delta frame) as Responses text deltas of the part whose
    step is `index` and whose delta fields are `fields` (stream_wire.text_fields), numbered from `first`;
    None when anything in it is not a text of that part (nor an empty one: no event)."""
    heads, boundary = _shape(index)
    opening = heads.match(run)
    if opening is None:
        return None
    texts = boundary.split(run)
    # the last end matched the run's end, leaving nothing after it
    if texts.pop():
        return None
    texts[0] = texts[0][opening.end() :]
    joined = b",".join(texts)
    # a piece that is not one text holds a frame's end (its newlines); an empty text makes no event
    if b"\n" in joined or _EMPTY_TEXT in texts:
        return None
    count = len(texts)
    # each frame is its number, the fields, its text, and its tail with the next one's head, put in place
    # by slice (half the time of a join over zipped iterators, measured); the last piece is the tail alone
    pieces = [_TAIL_HEAD] * (4 * count)
    pieces[0::4] = (b"%d," * count % tuple(range(first, first + count))).split(b",")[:-1]
    pieces[1::4] = repeat(fields, count)
    pieces[2::4] = texts
    pieces[0], pieces[-1] = TEXT_HEAD + pieces[0], TEXT_TAIL
    framed = b"".join(pieces)
    return Framed(frames=framed, texts=joined + b",", count=count)
