"""Unit tests of the wire protocol, with no server: the create codec, unknown-field warnings, the status
machine and the TurnBuilder that turns upstream events into a turn's output steps."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from server.protocol import codec, sse, views
from server.protocol import deltas as d
from server.protocol import status as st
from server.protocol.codec import InvalidArgument, decode_create, json_encoder
from server.protocol.content import FunctionResultContent, ImageContent, TextContent, UnknownContent
from server.protocol.events import InteractionStatusUpdate, StepDelta, StepStart, StepStop
from server.protocol.interaction import ErrorInfo, InteractionConfig, Usage
from server.protocol.records import StoredConfig
from server.protocol.steps import (
    FunctionCallStep,
    FunctionResultStep,
    ModelOutputStep,
    Step,
    ThoughtStep,
    UnknownStep,
    UserInputStep,
)
from server.protocol.tools import FunctionTool, GoogleSearchTool, Tool, UnknownTool
from server.runner.turn import TurnBuilder
from server.upstream import base as up


def compact(value: Any) -> bytes:
    """JSON as a client would send it: compact, UTF-8, keys in the given order."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def body(**fields: Any) -> bytes:
    return compact({"model": "echo", **fields})


def invalid(raw: bytes, *, strict: bool = False) -> InvalidArgument:
    with pytest.raises(InvalidArgument) as info:
        decode_create(raw, strict=strict)
    return info.value


# ---------------------------------------------------------------------------------------------------------
# decode_create: the four input forms (spec §3.1)


def test_input_as_string() -> None:
    request, steps, warnings = decode_create(body(input="Hello there"))
    assert request.model == "echo"
    assert request.store is True and request.background is False and request.stream is False
    assert steps == [UserInputStep(content=[TextContent(text="Hello there")])]
    assert warnings == []


def test_input_as_one_content_object() -> None:
    _, steps, _ = decode_create(
        body(input={"type": "image", "uri": "https://x/y.png", "mime_type": "image/png"})
    )
    assert steps == [UserInputStep(content=[ImageContent(uri="https://x/y.png", mime_type="image/png")])]


def test_input_as_content_list_is_one_user_step() -> None:
    _, steps, _ = decode_create(
        body(
            input=[
                {"type": "text", "text": "Describe"},
                {"type": "image", "mime_type": "image/png", "uri": "https://x/y.png"},
            ]
        )
    )
    assert steps == [
        UserInputStep(
            content=[TextContent(text="Describe"), ImageContent(mime_type="image/png", uri="https://x/y.png")]
        )
    ]


def test_input_as_step_list_keeps_every_step() -> None:
    history = [
        {"type": "user_input", "content": [{"type": "text", "text": "What is 2+2?"}]},
        {"type": "model_output", "content": [{"type": "text", "text": "4"}]},
        {"type": "function_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}},
        {"type": "function_result", "call_id": "call_1", "name": "get_weather", "result": "sunny"},
        {"type": "user_input", "content": [{"type": "text", "text": "Times 3?"}]},
    ]
    _, steps, _ = decode_create(body(input=history, store=False))
    assert [type(s) for s in steps] == [
        UserInputStep,
        ModelOutputStep,
        FunctionCallStep,
        FunctionResultStep,
        UserInputStep,
    ]
    assert steps[2] == FunctionCallStep(id="call_1", name="get_weather", arguments={"city": "Paris"})
    # known steps encode back to what was sent
    assert msgspec.json.decode(json_encoder.encode(steps)) == history


def test_input_as_one_step_object_with_string_content() -> None:
    _, steps, _ = decode_create(body(input={"type": "user_input", "content": "hi"}))
    assert steps == [UserInputStep(content=[TextContent(text="hi")])]


def test_no_input_gives_no_steps() -> None:
    # the codec leaves "input is required" to the service; it only normalises
    assert decode_create(body())[1] == []
    assert decode_create(body(input=[]))[1] == []


def test_request_fields_are_decoded() -> None:
    request, _, _ = decode_create(
        body(
            input="x",
            store=False,
            stream=True,
            system_instruction="Be terse.",
            generation_config={"temperature": 0.2, "max_output_tokens": 64},
            tools=[{"type": "function", "name": "f"}, {"type": "google_search"}],
            labels={"team": "x"},
        )
    )
    assert request.store is False and request.stream is True
    assert request.system_instruction == "Be terse."
    assert request.generation_config is not None and request.generation_config.max_output_tokens == 64
    tools: list[Tool] = [FunctionTool(name="f"), GoogleSearchTool()]
    assert request.tools == tools
    assert request.labels == {"team": "x"}


# ---------------------------------------------------------------------------------------------------------
# legacy role turns


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ([{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "input[0].role"),
        ([{"role": "user", "content": "hi"}, {"role": "model", "content": "yo"}], "input[0].role"),
        (
            [
                {"type": "user_input", "content": [{"type": "text", "text": "hi"}]},
                {"role": "model", "content": "x"},
            ],
            "input[1].role",
        ),
        ({"role": "user", "content": "hi"}, "input.role"),
    ],
)
def test_legacy_role_turns_are_rejected(value: Any, field: str) -> None:
    error = invalid(body(input=value))
    assert error.field == field
    assert f"`{field}`" in str(error)
    assert "legacy" in str(error)


# ---------------------------------------------------------------------------------------------------------
# unknown types are kept and re-encoded byte-exactly


UNKNOWN_STEP = {
    "type": "brand_new_step",
    "zeta": 1,
    "alpha": {"nested": [1, 2.5, None, True, {"b": "ü", "a": []}]},
    "signature": "c2ln",
    "empty": {},
    "nothing": None,
}
UNKNOWN_CONTENT = {"type": "hologram", "uri": "holo://x", "frames": [3, 2, 1], "meta": {"z": None, "a": "é"}}
UNKNOWN_TOOL = {"type": "teleporter", "range_km": 12.5, "targets": ["moon", {"name": "mars"}], "on": False}


def test_unknown_step_type_round_trips_byte_exactly() -> None:
    user = {"type": "user_input", "content": [{"type": "text", "text": "hi"}]}
    _, steps, warnings = decode_create(body(input=[user, UNKNOWN_STEP]))
    assert isinstance(steps[1], UnknownStep)
    assert steps[1].type == "brand_new_step"
    assert json_encoder.encode(steps[1]) == compact(UNKNOWN_STEP)
    assert json_encoder.encode(steps) == compact([user, UNKNOWN_STEP])
    # fields of an unknown step are not "unknown fields": the whole step is kept
    assert warnings == []


def test_unknown_step_alone_is_a_step() -> None:
    _, steps, _ = decode_create(body(input=[UNKNOWN_STEP]))
    assert len(steps) == 1 and isinstance(steps[0], UnknownStep)
    assert json_encoder.encode(steps[0]) == compact(UNKNOWN_STEP)


def test_unknown_content_type_in_a_step_round_trips_byte_exactly() -> None:
    step = {"type": "user_input", "content": [{"type": "text", "text": "look"}, UNKNOWN_CONTENT]}
    _, steps, warnings = decode_create(body(input=[step]))
    assert isinstance(steps[0], UserInputStep)
    content = steps[0].content
    assert isinstance(content, list) and isinstance(content[1], UnknownContent)
    assert json_encoder.encode(content[1]) == compact(UNKNOWN_CONTENT)
    assert json_encoder.encode(steps[0]) == compact(step)
    assert warnings == []


def test_unknown_content_in_model_output_round_trips() -> None:
    step = {"type": "model_output", "content": [UNKNOWN_CONTENT, {"type": "text", "text": "ok"}]}
    user = {"type": "user_input", "content": [{"type": "text", "text": "again"}]}
    _, steps, _ = decode_create(body(input=[step, user], store=False))
    assert json_encoder.encode(steps[0]) == compact(step)


def test_content_list_with_an_unknown_content_type_is_one_user_step() -> None:
    _, steps, _ = decode_create(body(input=[{"type": "text", "text": "look"}, UNKNOWN_CONTENT]))
    assert len(steps) == 1 and isinstance(steps[0], UserInputStep)
    assert steps[0].content[0] == TextContent(text="look")


def test_unknown_tool_type_round_trips_byte_exactly() -> None:
    tools = [{"type": "function", "name": "f", "parameters": {"type": "object"}}, UNKNOWN_TOOL]
    request, _, warnings = decode_create(body(input="x", tools=tools))
    assert request.tools is not None
    assert isinstance(request.tools[0], FunctionTool)
    assert isinstance(request.tools[1], UnknownTool)
    assert json_encoder.encode(request.tools[1]) == compact(UNKNOWN_TOOL)
    assert json_encoder.encode(request.tools) == compact(tools)
    assert warnings == []


def test_unknown_types_survive_the_msgpack_store_encoding() -> None:
    step = {"type": "user_input", "content": [UNKNOWN_CONTENT]}
    _, steps, _ = decode_create(body(input=[step, UNKNOWN_STEP]))
    packed = codec.msgpack_encoder.encode(steps)
    again = codec.msgpack_decoder(list[Step]).decode(packed)
    assert json_encoder.encode(again) == compact([step, UNKNOWN_STEP])


# ---------------------------------------------------------------------------------------------------------
# thought.signature


def test_thought_signature_round_trips() -> None:
    thought = {
        "type": "thought",
        "signature": "c2lnLWI=",
        "summary": [{"type": "text", "text": "Considering"}],
    }
    history = [
        {"type": "user_input", "content": [{"type": "text", "text": "hi"}]},
        thought,
        {"type": "model_output", "content": [{"type": "text", "text": "Hello!"}]},
        {"type": "user_input", "content": [{"type": "text", "text": "again"}]},
    ]
    _, steps, _ = decode_create(body(input=history, store=False))
    assert isinstance(steps[1], ThoughtStep)
    assert steps[1].signature == "c2lnLWI="
    assert steps[1].summary == [TextContent(text="Considering")]
    assert json_encoder.encode(steps[1]) == compact(thought)
    assert json_encoder.encode(steps) == compact(history)


def test_thought_without_signature_and_with_content_is_accepted() -> None:
    # sttp-ai replays thoughts with `content` and sometimes no signature
    thought = {"type": "thought", "content": [{"type": "text", "text": "hmm"}]}
    _, steps, _ = decode_create(body(input=[thought, {"type": "user_input", "content": "go"}]))
    assert isinstance(steps[0], ThoughtStep) and steps[0].signature is None
    assert json_encoder.encode(steps[0]) == compact(thought)


# ---------------------------------------------------------------------------------------------------------
# errors name the full field path


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        (
            {
                "input": [
                    {"type": "user_input", "content": [{"type": "text", "text": "a"}]},
                    {"type": "model_output", "content": [{"type": "text", "text": "b"}]},
                    {"type": "user_input", "content": [{"type": "image", "mime_type": 5}]},
                ]
            },
            "input[2].content[0].mime_type",
        ),
        (
            {
                "input": [
                    {
                        "type": "user_input",
                        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": 7}],
                    }
                ]
            },
            "input[0].content[1].text",
        ),
        ({"input": [{"type": "text", "text": "a"}, {"type": "image", "uri": 5}]}, "input[1].uri"),
        ({"input": [{"type": "user_input", "content": 5}]}, "input[0].content"),
        (
            {"input": [{"type": "function_call", "id": "c", "name": "f", "arguments": "x"}]},
            "input[0].arguments",
        ),
        ({"input": [{}]}, "input[0].type"),
        ({"input": [1]}, "input[0]"),
        ({"input": 5}, "input"),
        ({"input": "x", "generation_config": {"temperature": "hot"}}, "generation_config.temperature"),
        (
            {"input": "x", "generation_config": {"image_config": {"aspect_ratio": 1}}},
            "generation_config.image_config.aspect_ratio",
        ),
        (
            {"input": "x", "tools": [{"type": "google_search"}, {"type": "function", "name": 3}]},
            "tools[1].name",
        ),
        ({"input": "x", "tools": "all"}, "tools"),
        ({"input": "x", "store": "no"}, "store"),
        ({"input": "x", "model": 5}, "model"),
        ({"input": "x", "labels": {"a": 1}}, "labels"),
    ],
)
def test_a_field_error_names_the_full_path(fields: dict[str, Any], path: str) -> None:
    error = invalid(body(**fields))
    assert error.field is not None
    assert error.field == path or error.field.startswith(path), error.field
    assert f"`{error.field}`" in str(error)


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ({"type": "image", "data": []}, "input.data"),
        ({"type": "user_input", "content": 5}, "input.content"),
    ],
)
def test_a_field_error_in_a_single_object_input_names_input_not_input_0(value: Any, path: str) -> None:
    assert invalid(body(input=value)).field == path


def test_a_missing_required_field_names_the_object() -> None:
    error = invalid(body(input=[{"type": "function_call", "name": "f"}]))
    assert error.field == "input[0]"
    assert "`id`" in error.message


def test_malformed_json() -> None:
    for raw in (
        b'{"model":',
        b"",
        b"{,}",
        b'{"model": "echo", }',
        b'{"input": "\xff"}',
        b"{'model': 'echo'}",
    ):
        error = invalid(raw)
        assert "JSON" in str(error), raw


def test_deeply_nested_json_is_an_invalid_argument() -> None:
    invalid(b'{"model":"echo","input":' + b"[" * 5000 + b"]" * 5000 + b"}")


@pytest.mark.parametrize("raw", [b"[]", b'[{"model": "echo"}]', b'"hello"', b"null", b"5", b"true"])
def test_non_object_body(raw: bytes) -> None:
    error = invalid(raw)
    assert "object" in str(error)


# ---------------------------------------------------------------------------------------------------------
# unknown-field warnings


def test_no_unknown_fields_no_warnings() -> None:
    assert decode_create(body(input="x", generation_config={"temperature": 1.0}))[2] == []


def test_unknown_fields_are_named_with_their_path() -> None:
    _, _, warnings = decode_create(
        body(
            future_field=1,
            input=[{"type": "user_input", "yyy": 2, "content": [{"type": "text", "text": "x", "zzz": 1}]}],
            generation_config={"temperature": 0.5, "foo": 1, "image_config": {"bar": 2}},
            tools=[{"type": "function", "name": "f", "baz": 3}],
        )
    )
    assert sorted(warnings) == sorted(
        [
            "Unknown field ignored: future_field",
            "Unknown field ignored: input[0].yyy",
            "Unknown field ignored: input[0].content[0].zzz",
            "Unknown field ignored: generation_config.foo",
            "Unknown field ignored: generation_config.image_config.bar",
            "Unknown field ignored: tools[0].baz",
        ]
    )


def test_unknown_field_in_a_single_content_input() -> None:
    assert decode_create(body(input={"type": "text", "text": "x", "zzz": 1}))[2] == [
        "Unknown field ignored: input.zzz"
    ]


def test_at_most_five_names_per_object() -> None:
    extra = {f"extra_{i}": i for i in range(8)}
    _, _, warnings = decode_create(body(input="x", **extra))
    assert warnings[:5] == [f"Unknown field ignored: extra_{i}" for i in range(5)]
    assert len(warnings) == 6
    assert warnings[5].startswith("+3 more")


def test_exactly_five_names_is_not_cut() -> None:
    extra = {f"extra_{i}": i for i in range(5)}
    warnings = decode_create(body(input="x", **extra))[2]
    assert len(warnings) == 5
    assert not any(w.startswith("+") for w in warnings)


def test_per_object_limit_applies_to_each_object() -> None:
    _, _, warnings = decode_create(
        body(
            input="x",
            generation_config={f"g{i}": i for i in range(7)},
            tools=[{"type": "function", "name": "f", **{f"t{i}": i for i in range(6)}}],
        )
    )
    gen = [w for w in warnings if "generation_config" in w]
    tool = [w for w in warnings if "tools[0]" in w]
    assert len(gen) == 6 and gen[-1].startswith("+2 more") and "generation_config" in gen[-1]
    assert len(tool) == 6 and tool[-1].startswith("+1 more") and "tools[0]" in tool[-1]
    assert len(warnings) == 12


def test_at_most_twenty_entries_overall() -> None:
    tools = [{"type": "function", "name": f"f{i}", "unknown": i} for i in range(25)]
    warnings = decode_create(body(input="x", tools=tools))[2]
    assert len(warnings) == 20
    assert warnings[:19] == [f"Unknown field ignored: tools[{i}].unknown" for i in range(19)]
    assert warnings[19].startswith("+6 more")


def test_twenty_entries_are_not_cut() -> None:
    tools = [{"type": "function", "name": f"f{i}", "unknown": i} for i in range(20)]
    warnings = decode_create(body(input="x", tools=tools))[2]
    assert len(warnings) == 20
    assert not any(w.startswith("+") for w in warnings)


def test_both_limits_together() -> None:
    # 4 objects with 7 unknown fields each: 4 x (5 names + "+2 more") = 24 entries, cut to 20
    tools = [{"type": "function", "name": f"f{i}", **{f"u{j}": j for j in range(7)}} for i in range(4)]
    warnings = decode_create(body(input="x", tools=tools))[2]
    assert len(warnings) == 20
    assert warnings[5].startswith("+2 more")
    assert warnings[19].startswith("+5 more")
    assert sum(1 for w in warnings if w.startswith("+")) == 4


def test_warnings_of_directly() -> None:
    assert codec.warnings_of([]) == []
    unknown = [("", f"top{i}") for i in range(30)] + [(f"tools[{i}]", "x") for i in range(30)]
    warnings = codec.warnings_of(unknown)
    assert len(warnings) == codec.MAX_WARNINGS == 20
    assert codec.MAX_NAMES_PER_OBJECT == 5
    assert warnings[5].startswith("+25 more")
    assert warnings[-1].startswith("+")


def test_strict_turns_the_first_unknown_field_into_invalid_argument() -> None:
    error = invalid(body(input="x", generation_config={"foo": 1}, bar=1), strict=True)
    assert error.field == "generation_config.foo"
    assert "`generation_config.foo`" in str(error)
    error = invalid(body(future_field=1, input="x"), strict=True)
    assert error.field == "future_field"
    error = invalid(
        body(input=[{"type": "user_input", "content": [{"type": "text", "text": "x", "zzz": 1}]}]),
        strict=True,
    )
    assert error.field == "input[0].content[0].zzz"


def test_strict_accepts_a_clean_request_and_unknown_types() -> None:
    request, steps, warnings = decode_create(
        body(input=[{"type": "user_input", "content": "x"}, UNKNOWN_STEP], tools=[UNKNOWN_TOOL]), strict=True
    )
    assert warnings == [] and len(steps) == 2 and request.tools is not None


# ---------------------------------------------------------------------------------------------------------
# the status machine (spec §6)

NINE = {
    "queued",
    "in_progress",
    "requires_action",
    "requires_continuation",
    "completed",
    "failed",
    "cancelled",
    "incomplete",
    "budget_exceeded",
}


def test_all_nine_statuses_exist() -> None:
    assert st.ALL == NINE
    for name in NINE:
        assert getattr(st, name.upper()) == name
    assert st.RUNNING == {"queued", "in_progress"}
    assert st.RUNNING | st.FINISHED == st.ALL and not st.RUNNING & st.FINISHED
    assert st.TERMINAL == {"completed", "failed", "cancelled", "incomplete", "budget_exceeded"}
    assert st.TERMINAL <= st.FINISHED


def test_a_waiting_run_is_in_progress_in_every_rendering() -> None:
    """Google's API answers a background create `in_progress`; the Vercel AI SDK knows no `queued`."""
    config = StoredConfig(config=InteractionConfig(model="echo"))
    stamp = "2026-11-30T00:00:00Z"
    shown = views.interaction(
        interaction_id="i", status=st.QUEUED, config=config, created=stamp, updated=stamp
    )
    assert shown.status == st.IN_PROGRESS
    assert views.snapshot("i", config, stamp, status=st.QUEUED).status == st.IN_PROGRESS
    frame = sse.frame(InteractionStatusUpdate(interaction_id="i", status=st.QUEUED))
    assert b'"status":"in_progress"' in frame and b"queued" not in frame
    assert st.QUEUED not in st.SHOWN and st.SHOWN == st.ALL - {st.QUEUED}


def test_a_function_result_inside_user_input_is_typed_and_kept_as_sent() -> None:
    item = {"type": "function_result", "call_id": "c1", "name": "f", "result": '{"a":1}', "signature": "cw=="}
    _, steps, warnings = decode_create(body(input=[{"type": "user_input", "content": [item]}]))
    [step] = steps
    assert isinstance(step, UserInputStep)
    assert step.content == [FunctionResultContent(call_id="c1", name="f", result='{"a":1}', signature="cw==")]
    assert warnings == []
    assert json.loads(json_encoder.encode(step)) == {"type": "user_input", "content": [item]}


# ---------------------------------------------------------------------------------------------------------
# TurnBuilder


def text(value: str) -> up.StepDelta:
    return up.StepDelta(delta=d.TextDelta(text=value))


def arguments_of(step: Step) -> dict[str, Any]:
    assert isinstance(step, FunctionCallStep), step
    return step.arguments


def test_text_deltas_accumulate_into_one_model_output_step() -> None:
    turn = TurnBuilder()
    first = turn.feed(text("Hel"))
    assert [type(e) for e in first] == [StepStart, StepDelta]
    assert isinstance(first[0], StepStart) and first[0].index == 0
    assert isinstance(first[0].step, ModelOutputStep)
    assert turn.feed(text("lo ")) == [StepDelta(index=0, delta=d.TextDelta(text="lo "))]
    turn.feed(text("world"))
    assert turn.feed(up.Finished(status="completed")) == [StepStop(index=0)]
    assert turn.steps == [ModelOutputStep(content=[TextContent(text="Hello world")])]
    assert turn.final_status() == "completed"
    # the step.start event keeps the skeleton the client was sent, not the finished step
    assert (
        json_encoder.encode(first[0].step) == b'{"type":"model_output","content":[]}'
    )  # content always present


def test_explicit_step_boundaries() -> None:
    turn = TurnBuilder()
    assert turn.feed(up.StepStarted(step=ModelOutputStep())) == [StepStart(index=0, step=ModelOutputStep())]
    turn.feed(text("a"))
    turn.feed(text("b"))
    assert turn.feed(up.StepEnded()) == [StepStop(index=0)]
    assert turn.feed(up.StepEnded()) == []
    events = turn.feed(text("c"))  # a delta with no open step opens a new model_output
    assert [type(e) for e in events] == [StepStart, StepDelta]
    assert isinstance(events[1], StepDelta) and events[1].index == 1
    turn.close_step()
    assert turn.steps == [
        ModelOutputStep(content=[TextContent(text="ab")]),
        ModelOutputStep(content=[TextContent(text="c")]),
    ]


def test_arguments_delta_fragments_are_parsed_at_step_stop() -> None:
    turn = TurnBuilder()
    turn.feed(up.StepStarted(step=FunctionCallStep(id="call_1", name="get_weather")))
    turn.feed(up.StepDelta(delta=d.ArgumentsDelta(arguments='{"city": "Pa')))
    turn.feed(up.StepDelta(delta=d.ArgumentsDelta(arguments='ris", "days": [1, 2]')))
    turn.feed(up.StepDelta(delta=d.ArgumentsDelta(arguments="}")))
    call = turn.steps[0]
    assert isinstance(call, FunctionCallStep) and call.arguments == {}
    assert turn.feed(up.StepEnded()) == [StepStop(index=0)]
    assert call.arguments == {"city": "Paris", "days": [1, 2]}
    assert turn.final_status() == "requires_action"


def test_arguments_that_are_not_a_json_object() -> None:
    for fragments, expected in [
        (['{"a": ', "1"], {"_raw": '{"a": 1'}),
        (["[1, ", "2]"], {"value": [1, 2]}),
    ]:
        turn = TurnBuilder()
        turn.feed(up.StepStarted(step=FunctionCallStep(id="c", name="f")))
        for fragment in fragments:
            turn.feed(up.StepDelta(delta=d.ArgumentsDelta(arguments=fragment)))
        turn.close_step()
        assert arguments_of(turn.steps[0]) == expected


def test_second_function_call_does_not_inherit_the_first_ones_arguments() -> None:
    turn = TurnBuilder()
    turn.feed(up.StepStarted(step=FunctionCallStep(id="c1", name="f")))
    turn.feed(up.StepDelta(delta=d.ArgumentsDelta(arguments='{"n": 1}')))
    turn.feed(up.StepStarted(step=FunctionCallStep(id="c2", name="f")))  # closes the first
    turn.feed(up.StepDelta(delta=d.ArgumentsDelta(arguments='{"n": 2}')))
    turn.feed(up.Finished(status="requires_action"))
    assert [arguments_of(s) for s in turn.steps] == [{"n": 1}, {"n": 2}]


def test_thought_summary_and_signature() -> None:
    turn = TurnBuilder()
    events = turn.feed(up.StepDelta(delta=d.ThoughtSummaryDelta(content=TextContent(text="Think"))))
    assert isinstance(events[0], StepStart) and isinstance(events[0].step, ThoughtStep)
    turn.feed(up.StepDelta(delta=d.ThoughtSummaryDelta(content=TextContent(text="ing..."))))
    turn.feed(up.StepDelta(delta=d.ThoughtSignatureDelta(signature="c2lnLWI=")))
    events = turn.feed(up.StepStarted(step=ModelOutputStep()))
    assert events == [StepStop(index=0), StepStart(index=1, step=ModelOutputStep())]
    turn.feed(text("Hello!"))
    turn.feed(up.StepEnded())
    expected: list[Step] = [
        ThoughtStep(signature="c2lnLWI=", summary=[TextContent(text="Thinking...")]),
        ModelOutputStep(content=[TextContent(text="Hello!")]),
    ]
    assert turn.steps == expected
    assert msgspec.json.decode(json_encoder.encode(turn.steps[0])) == {
        "type": "thought",
        "signature": "c2lnLWI=",
        "summary": [{"type": "text", "text": "Thinking..."}],
    }


def test_a_step_left_open_is_closed_by_close_step() -> None:
    turn = TurnBuilder()
    turn.feed(text("partial "))
    turn.feed(text("answer"))
    assert turn.close_step() == [StepStop(index=0)]
    assert turn.close_step() == []
    assert turn.steps == [ModelOutputStep(content=[TextContent(text="partial answer")])]


def test_close_step_parses_the_arguments_of_an_open_call() -> None:
    turn = TurnBuilder()
    turn.feed(up.StepStarted(step=FunctionCallStep(id="c", name="f")))
    turn.feed(up.StepDelta(delta=d.ArgumentsDelta(arguments='{"q": "x"}')))
    assert turn.close_step() == [StepStop(index=0)]
    assert arguments_of(turn.steps[0]) == {"q": "x"}


def test_final_status_rules() -> None:
    empty = TurnBuilder()
    assert empty.final_status() == "completed"

    with_call = TurnBuilder()
    with_call.feed(up.StepStarted(step=FunctionCallStep(id="c", name="f")))
    with_call.feed(up.StepEnded())
    assert with_call.final_status() == "requires_action"

    # a status the upstream reported wins
    for status in ("incomplete", "completed", "failed"):
        turn = TurnBuilder()
        turn.feed(up.StepStarted(step=FunctionCallStep(id="c", name="f")))
        turn.feed(up.Finished(status=status))
        assert turn.final_status() == status

    failed = TurnBuilder()
    failed.feed(text("so far"))
    error = ErrorInfo(code="upstream", message="boom")
    assert failed.feed(up.Finished(status="failed", error=error)) == [StepStop(index=0)]
    assert failed.final_status() == "failed" and failed.error == error
    assert failed.steps == [ModelOutputStep(content=[TextContent(text="so far")])]


def test_usage_reports_replace_each_other() -> None:
    turn = TurnBuilder()
    assert turn.feed(up.UsageReported(usage=Usage(total_input_tokens=1))) == []
    turn.feed(up.UsageReported(usage=Usage(total_input_tokens=3, total_output_tokens=2, total_tokens=5)))
    assert turn.usage == Usage(total_input_tokens=3, total_output_tokens=2, total_tokens=5)
