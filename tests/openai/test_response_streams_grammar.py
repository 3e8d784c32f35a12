"""The streaming grammar alone (dialects/responses/events.py), fed our frames as a log holds them: the ends
a live server rarely shows (a failed run, a run lost mid-step, Redis away mid-stream, a cancel), the
reasoning summaries the echo models never make, the numbering a resume relies on. Pure: no server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from server.dialects.responses import stream_wire as ev
from server.dialects.responses import text_runs
from server.dialects.responses.events import Renderer, render
from server.protocol import sse
from server.protocol.content import TextContent
from server.protocol.deltas import ArgumentsDelta, TextDelta, ThoughtSignatureDelta, ThoughtSummaryDelta
from server.protocol.events import (
    ErrorEvent,
    Event,
    InteractionCompleted,
    InteractionCreated,
    InteractionStatusUpdate,
    StepDelta,
    StepStart,
    StepStop,
)
from server.protocol.interaction import ErrorInfo, Interaction, Usage
from server.protocol.steps import FunctionCallStep, ModelOutputStep, Step, ThoughtStep

from ..sse import logged
from .stream_checks import Grammar, Raw, parse, text_of, validate

ID = "ix123"
CREATED = "2026-06-01T12:00:00Z"
USAGE = Usage(total_input_tokens=3, total_output_tokens=2, total_tokens=5)


def _interaction(status: str, steps: list[Step] | None = None) -> Interaction:
    return Interaction(
        id=ID,
        object="interaction",
        status=status,
        model="echo",
        created=CREATED,
        updated=CREATED,
        steps=steps,
    )


def _start() -> list[Event]:
    return [
        InteractionCreated(interaction=_interaction("in_progress")),
        InteractionStatusUpdate(interaction_id=ID, status="in_progress"),
    ]


def _text_step(index: int, *words: str, stop: bool = True) -> list[Event]:
    deltas: list[Event] = [StepDelta(index=index, delta=TextDelta(text=word)) for word in words]
    return [
        StepStart(index=index, step=ModelOutputStep()),
        *deltas,
        *([StepStop(index=index)] if stop else []),
    ]


def _end(status: str, steps: list[Step]) -> list[Event]:
    return [
        InteractionStatusUpdate(interaction_id=ID, status=status, usage=USAGE),
        InteractionCompleted(interaction=_interaction(status, steps)),
    ]


def _rendered(chunk: bytes, **options: Any) -> Raw:
    renderer = Renderer(**options)
    return parse(renderer.feed(chunk) + b"data: [DONE]\n\n")


def _valid(stream: Raw) -> Raw:
    for name, event in zip(stream.names, stream.events, strict=True):
        validate(name, event)
    return stream


def test_a_failed_run_ends_with_response_failed_and_what_it_made() -> None:
    log = logged(
        *_start(),
        *_text_step(0, "half ", "an answer"),
        InteractionStatusUpdate(interaction_id=ID, status="failed", usage=USAGE),
        ErrorEvent(error=ErrorInfo(code="upstream_500", message="The model failed")),
    )
    stream = _valid(_rendered(log))
    Grammar().check(stream)
    failed = stream.events[-1]
    assert failed["type"] == "response.failed"
    assert failed["response"]["status"] == "failed"
    assert failed["response"]["error"] == {"code": "server_error", "message": "The model failed"}
    assert failed["response"]["output"][0]["content"][0]["text"] == "half an answer"
    assert failed["response"]["usage"]["output_tokens"] == 2


def test_a_run_lost_mid_step_closes_its_item_incomplete() -> None:
    """The reaper ends a lost run from its log: no step.stop came, its item ends incomplete."""
    log = logged(
        *_start(),
        *_text_step(0, "cut ", "short", stop=False),
        InteractionStatusUpdate(interaction_id=ID, status="failed"),
        ErrorEvent(error=ErrorInfo(code="worker_lost", message="The worker was lost")),
    )
    stream = _valid(_rendered(log))
    Grammar().check(stream)
    kinds = stream.names[-4:]
    assert kinds == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.failed",
    ]
    assert stream.events[-2]["item"]["status"] == "incomplete"


def test_redis_lost_mid_stream_is_an_error_event_that_takes_no_number() -> None:
    """The reader's own end (not the log's): the number it carries is the last the client has, so that a
    resume after it (starting_after=that number) misses nothing."""
    log = logged(*_start(), *_text_step(0, "one ", "two ", stop=False))
    stream = _valid(_rendered(log + sse.unavailable_frame()))
    error = stream.events[-1]
    assert error["type"] == "error" and error["code"] == "unavailable"
    assert error["error"]["message"] == error["message"]
    assert error["sequence_number"] == stream.events[-2]["sequence_number"]
    assert stream.done


async def test_render_ends_with_done_and_passes_keepalives_through() -> None:
    async def frames() -> AsyncIterator[bytes]:
        yield logged(*_start())
        yield sse.KEEPALIVE
        yield logged(
            *_text_step(0, "hi"), *_end("completed", [ModelOutputStep(content=[TextContent(text="hi")])])
        )

    out = b"".join([chunk async for chunk in render(frames(), Renderer())])
    stream = _valid(parse(out))
    assert stream.comments == 1 and stream.done and out.endswith(b"data: [DONE]\n\n")
    Grammar().check(stream)


def test_numbering_is_the_logs_and_a_resume_drops_what_the_client_had() -> None:
    log = logged(*_start(), *_text_step(0, "a ", "b ", "c"), *_end("completed", [_answer("a b c")]))
    whole = _rendered(log)
    for after in (0, 3, len(whole.events) - 2):
        assert _rendered(log, after=after).events == whole.events[after + 1 :]
    # fed frame by frame (as a live relay yields them) the numbers are the same
    renderer = Renderer()
    pieces = b"".join(renderer.feed(frame + b"\n\n") for frame in log.split(b"\n\n") if frame)
    assert parse(pieces + b"data: [DONE]\n\n").events == whole.events


def test_reasoning_summaries_stream_as_summary_parts() -> None:
    thought = ThoughtStep(summary=[TextContent(text="Let me think.")], signature="c2ln")
    log = logged(
        *_start(),
        StepStart(index=0, step=ThoughtStep()),
        StepDelta(index=0, delta=ThoughtSummaryDelta(content=TextContent(text="Let me "))),
        StepDelta(index=0, delta=ThoughtSummaryDelta(content=TextContent(text="think."))),
        StepDelta(index=0, delta=ThoughtSignatureDelta(signature="c2ln")),
        StepStop(index=0),
        *_text_step(1, "42"),
        *_end("completed", [thought, _answer("42")]),
    )
    stream = _valid(_rendered(log))
    Grammar().check(stream)
    kinds = stream.names
    assert kinds[2:8] == [
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
    ]
    reasoning = stream.events[8]["item"]
    assert reasoning["summary"] == [{"type": "summary_text", "text": "Let me think."}]
    assert reasoning["encrypted_content"] == "c2ln" and reasoning["id"] == f"rs_{ID}_0"
    assert stream.events[-1]["response"]["output"][0] == reasoning
    assert text_of(stream) == "42"


def test_a_call_that_starts_whole_streams_its_arguments_in_one_delta() -> None:
    call = FunctionCallStep(id="call_1", name="lookup", arguments={"q": "it"})
    log = logged(
        *_start(), StepStart(index=0, step=call), StepStop(index=0), *_end("requires_action", [call])
    )
    stream = _valid(_rendered(log))
    Grammar().check(stream)
    added = stream.events[2]["item"]
    assert added["arguments"] == "" and added["status"] == "in_progress"
    deltas = [e["delta"] for e in stream.events if e["type"] == "response.function_call_arguments.delta"]
    assert deltas == ['{"q":"it"}']
    assert stream.events[-1]["type"] == "response.completed"


def test_a_cancelled_response_ends_incomplete_and_a_rerun_is_in_progress_once() -> None:
    """A re-run of a lost run (which made no output) says in_progress again in the log: shown once."""
    log = logged(
        *_start(),
        InteractionStatusUpdate(interaction_id=ID, status="in_progress"),
        *_text_step(0, "partial"),
        *_end("cancelled", [_answer("partial")]),
    )
    stream = _valid(_rendered(log, background=True))
    Grammar().check(stream)
    assert stream.names[:3] == ["response.created", "response.queued", "response.in_progress"]
    assert stream.names.count("response.in_progress") == 1
    assert stream.events[-1]["type"] == "response.incomplete"
    assert stream.events[-1]["response"]["status"] == "cancelled"


def _answer(text: str) -> ModelOutputStep:
    return ModelOutputStep(content=[TextContent(text=text)])


def test_text_deltas_framed_from_their_bytes_are_what_their_struct_makes() -> None:
    """The text deltas are framed from the log's bytes (the hot path): byte for byte the Struct's frame."""
    words = ["plain ", 'quo"ted ', "new\nline ", "ünïcode ", "tab\t", "\u2028sep"]
    log = logged(*_start(), *_text_step(0, *words), *_end("completed", [_answer("".join(words))]))
    out = Renderer().feed(log)
    blocks = [block + b"\n\n" for block in out.split(b"\n\n") if b"output_text.delta" in block[:40]]
    assert len(blocks) == len(words)
    for block, word in zip(blocks, words, strict=True):
        event = json.loads(block.partition(b"data: ")[2])
        assert event["delta"] == word
        fields = {k: v for k, v in event.items() if k != "type"}
        assert block == ev.frame(ev.TextDelta(**fields))
    assert parse(out + b"data: [DONE]\n\n").events[-1]["response"]["output"][0]["content"][0][
        "text"
    ] == "".join(words)


def test_a_response_that_ends_before_any_run_still_begins_with_created() -> None:
    """Cancelled or failed while queued: the log holds its end alone (runner/settle.py); the stream still
    opens with response.created, as the SDK requires, from what the end says."""
    cancelled = logged(*_end("cancelled", []))
    stream = _valid(_rendered(cancelled, background=True))
    Grammar().check(stream)
    assert stream.names == ["response.created", "response.queued", "response.incomplete"]
    assert stream.events[0]["response"]["id"] == ID and stream.events[0]["response"]["model"] == "echo"
    failed = logged(
        InteractionStatusUpdate(interaction_id=ID, status="failed"),
        ErrorEvent(error=ErrorInfo(code="worker_lost", message="Nobody ran it")),
    )
    stream = _valid(_rendered(failed, background=True, config=_interaction("queued")))
    Grammar().check(stream)
    assert stream.names == ["response.created", "response.queued", "response.failed"]
    assert stream.events[-1]["response"]["error"]["message"] == "Nobody ran it"


class _Counting(Renderer):
    """A renderer that counts the frames it frames one by one (the rest went through a run)."""

    one_by_one = 0

    def _frames(self, chunk: bytes) -> None:
        self.one_by_one += chunk.count(b"\n\n")
        super()._frames(chunk)


def _long_log() -> bytes:
    """A log whose text comes in long runs, broken by what a run must not swallow: an empty text, a
    keep-alive, a function call's arguments, a second text step."""
    first = [f'w{n} "q" \\ 50% ü\n ' for n in range(40)]
    second = [f"s{n} " for n in range(30)]
    call = FunctionCallStep(id="call_1", name="f", arguments={})
    events: list[Event] = [
        *_start(),
        *_text_step(0, *first[:20], stop=False),
        StepDelta(index=0, delta=TextDelta(text="")),
        *[StepDelta(index=0, delta=TextDelta(text=word)) for word in first[20:]],
        StepStop(index=0),
        StepStart(index=1, step=call),
        StepDelta(index=1, delta=ArgumentsDelta(arguments='{"a": 1}')),
        StepStop(index=1),
        *_text_step(2, *second),
        *_end("completed", [_answer("".join(first)), call, _answer("".join(second))]),
    ]
    log = logged(*events)
    middle = log.index(b"event: step.delta", len(log) // 4)
    return log[:middle] + sse.KEEPALIVE + log[middle:]


def render_done() -> bytes:
    return b"data: [DONE]\n\n"


def test_runs_of_deltas_framed_at_once_are_the_frames_one_by_one() -> None:
    """`feed` frames a run of text deltas in one go (the relay hands over thousands of frames at a time):
    byte for byte what feeding the frames one at a time makes, whatever the chunks, and from any resume
    point; and most of a long log's frames do go through the runs."""
    log = _long_log()
    frames = [frame + b"\n\n" for frame in log.split(b"\n\n")[:-1]]
    for after in (None, 0, 5, 30, 60, 10_000):
        one = Renderer(after=after)
        expected = b"".join([one.feed(frame) for frame in frames])
        for size in (7, 13, 64, len(frames)):
            renderer = _Counting(after=after)
            chunks = [b"".join(frames[at : at + size]) for at in range(0, len(frames), size)]
            assert b"".join([renderer.feed(chunk) for chunk in chunks]) == expected, (after, size)
        if after is None:
            Grammar().check(_valid(parse(expected + render_done())))
    # one step's text, as a relay behind its client hands it over: in runs, all but seven frames (the
    # response's start and end, two each; the step's start and stop; its first delta, which opens the part)
    words = [f"w{n} " for n in range(500)]
    long = logged(*_start(), *_text_step(0, *words), *_end("completed", [_answer("".join(words))]))
    frames = [frame + b"\n\n" for frame in long.split(b"\n\n")[:-1]]
    for size in (64, len(frames)):
        renderer = _Counting()
        chunks = [b"".join(frames[at : at + size]) for at in range(0, len(frames), size)]
        assert b"".join([renderer.feed(chunk) for chunk in chunks]) == Renderer().feed(long)
        assert renderer.one_by_one == 7, size


def test_runs_are_read_whatever_ids_the_frames_carry() -> None:
    """A run is cut by the shape of sse.frame's text deltas, with the log's ids (`evt_`), a rebuilt log's
    (`evr_`: protocol/replay.py) or none (a store=false turn's frames): each goes through runs, byte for
    byte what frame-by-frame gives; a run mixing two steps' texts is framed one by one."""
    words = [f"w{n} " for n in range(300)]
    events = [*_start(), *_text_step(0, *words), *_end("completed", [_answer("".join(words))])]
    for kind in (sse.LOGGED, sse.REBUILT, None):
        for seq, event in enumerate(events, start=1):
            event.event_id = None if kind is None else sse.event_id(seq, kind)
        log = b"".join(sse.frame(event) for event in events)
        one, renderer = Renderer(), _Counting()
        frames = [frame + b"\n\n" for frame in log.split(b"\n\n")[:-1]]
        assert renderer.feed(log) == b"".join([one.feed(frame) for frame in frames])
        assert renderer.one_by_one == 7, kind
    other = sse.frame(StepDelta(index=1, delta=TextDelta(text="x")))
    mixed = b"".join(sse.frame(StepDelta(index=0, delta=TextDelta(text=w))) for w in words[:20])
    assert text_runs.frame_run(mixed + other + mixed, 0, b',"f":', 0) is None
    assert text_runs.frame_run(mixed, 0, b',"f":', 0) is not None
