"""A Chat Completions create body -> the create request, its input steps and its warnings (Creator.create).

    model                           model
    messages                        system_instruction + the input steps (messages.py)
    tools (function)                tools (function: name, description, parameters)
    tool_choice                     generation_config.tool_choice: none, auto, required -> any, a named
                                    function or allowed_tools -> allowed_tools
    response_format                 response_format: json_object -> JSON text, json_schema -> its schema
    max_completion_tokens           generation_config.max_output_tokens (and the older max_tokens)
    stop, temperature, top_p, seed  generation_config.stop_sequences, temperature, top_p, seed
    reasoning_effort                generation_config.thinking_level (minimal ... xhigh)
    metadata, user,                 labels (openai_labels.py: a stored completion is found by them)
    safety_identifier
    store                           store (default false, as OpenAI's: a stateless create)
    stream, stream_options          stream; include_usage ends the stream with a usage chunk

A `strict` function or schema is taken as it is (the SDKs' pydantic helpers send it): its schema goes to
the model, and what the model answers is not checked against it; the reply's `warnings` say so.
`parallel_tool_calls: true` is what every model here may do; `false` is refused. Unknown fields: as in
Google's dialect, a warning (the reply's `warnings`, our extension, as the Responses API's), or a 400 with
`http.strict_unknown_fields`.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from ...errors import InvalidArgument
from ...protocol.codec import convert, decode_json, find_unknown_fields, warnings_of
from ...protocol.interaction import CreateRequest
from ...protocol.steps import Step
from ...protocol.tools import FunctionTool, GenerationConfig, Tool
from ..openai_labels import labels_of
from . import wire
from .messages import steps_of

_EFFORT = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh"}
_CHOICE = {"none": "none", "auto": "auto", "required": "any"}
_JSON = {"type": "text", "mime_type": "application/json"}
_MISSING = re.compile(r"Object missing required field `(\w+)`")


class Decoded(msgspec.Struct, kw_only=True):
    create: CreateRequest
    steps: list[Step]
    warnings: list[str]
    #: end the stream with a usage chunk (`stream_options.include_usage`)
    include_usage: bool


def decode(body: bytes, *, strict: bool = False) -> Decoded:
    raw = decode_json(body)
    if not isinstance(raw, dict):
        raise InvalidArgument("The request body must be a JSON object")
    request = _convert(raw)
    unknown = find_unknown_fields(raw, wire.CreateChatCompletion)
    if unknown and strict:
        path, name = unknown[0]
        raise InvalidArgument("Unknown field", f"{path}.{name}" if path else name)
    refuse_unserved(request)
    system, steps = steps_of(request.messages)
    create = CreateRequest(
        model=request.model,
        system_instruction=system,
        tools=_tools(request.tools),
        generation_config=_generation(request),
        response_format=_format(request.response_format),
        labels=labels_of(raw),
        input=raw["messages"],
        store=bool(request.store),
        stream=bool(request.stream),
    )
    options = request.stream_options
    if options is not None and not request.stream:
        raise InvalidArgument("`stream_options` is only allowed with `stream: true`", "stream_options")
    include_usage = bool(options and options.include_usage)
    warnings = [*warnings_of(unknown), *_not_enforced(request)]
    return Decoded(create=create, steps=steps, warnings=warnings, include_usage=include_usage)


def _not_enforced(request: wire.CreateChatCompletion) -> list[str]:
    """The warnings of a `strict` taken as it is (the SDKs' pydantic helpers send it)."""
    found = [
        f"tools[{index}].function.strict: the arguments are not checked against the schema"
        for index, tool in enumerate(request.tools or ())
        if isinstance(tool, wire.FunctionTool) and tool.function.strict
    ]
    fmt = request.response_format
    if isinstance(fmt, wire.JsonSchemaFormat) and fmt.json_schema.strict:
        found.append("response_format.json_schema.strict: the answer is not checked against the schema")
    return found


def _convert(raw: dict[str, Any]) -> wire.CreateChatCompletion:
    try:
        return convert(raw, wire.CreateChatCompletion)
    except InvalidArgument as exc:
        missing = _MISSING.fullmatch(exc.message)
        if missing is None:
            raise
        # msgspec names the object, not the field: OpenAI's `param` is the field
        field = f"{exc.field}.{missing[1]}" if exc.field else missing[1]
        raise InvalidArgument("is required", field) from None


#: fields OpenAI defines that ask for what this server does not do, each with the values that ask for
#: nothing (those are accepted, and change no answer)
_NEUTRAL: dict[str, tuple[Any, ...]] = {
    "audio": (),
    "frequency_penalty": (0,),
    "presence_penalty": (0,),
    "functions": (),
    "function_call": (),
    "logit_bias": ({},),
    "logprobs": (False,),
    "top_logprobs": (0,),
    "modalities": (["text"],),
    "prediction": (),
    "web_search_options": (),
    "moderation": (),
    "verbosity": ("medium",),
    "service_tier": ("auto", "default"),
    "n": (1,),
    "parallel_tool_calls": (True,),
}
_WHY = {
    "functions": "deprecated: send `tools`",
    "function_call": "deprecated: send `tool_choice`",
    "n": "only one choice is served (n=1)",
    "modalities": "only text output is served",
    "parallel_tool_calls": "models here may always call several functions at once",
}


def refuse_unserved(request: wire.CreateChatCompletion) -> None:
    for name, neutral in _NEUTRAL.items():
        value = getattr(request, name)
        # each field has one type (msgspec checked it): 0 and 0.0 alike, never False for 0
        if value is not None and value not in neutral:
            raise InvalidArgument(_WHY.get(name, "not served by this server"), name)
    for index, tool in enumerate(request.tools or ()):
        if isinstance(tool, wire.CustomTool):
            raise InvalidArgument("Custom tools are not served: send function tools", f"tools[{index}].type")
    if isinstance(request.tool_choice, wire.CustomToolChoice):
        raise InvalidArgument("Custom tools are not served", "tool_choice")
    if request.max_tokens is not None and request.max_completion_tokens not in (None, request.max_tokens):
        raise InvalidArgument("Give `max_completion_tokens` or `max_tokens`, not both", "max_tokens")
    if request.reasoning_effort is not None and request.reasoning_effort not in _EFFORT:
        served = ", ".join(_EFFORT)
        raise InvalidArgument(f"Expected one of {served}", "reasoning_effort")


def _tools(tools: list[wire.FunctionTool | wire.CustomTool] | None) -> list[Tool] | None:
    if not tools:
        return None
    made: list[Tool] = []
    for tool in tools:
        assert isinstance(tool, wire.FunctionTool)  # refuse_unserved refused the others
        function = tool.function
        made.append(
            FunctionTool(name=function.name, description=function.description, parameters=function.parameters)
        )
    return made


def _generation(request: wire.CreateChatCompletion) -> GenerationConfig | None:
    stop = [request.stop] if isinstance(request.stop, str) else request.stop
    config = GenerationConfig(
        temperature=request.temperature,
        top_p=request.top_p,
        seed=request.seed,
        stop_sequences=stop or None,
        max_output_tokens=request.max_completion_tokens or request.max_tokens,
        thinking_level=_EFFORT.get(request.reasoning_effort or ""),
        tool_choice=_tool_choice(request),
    )
    return None if config == GenerationConfig() else config


def _tool_choice(request: wire.CreateChatCompletion) -> str | dict[str, Any] | None:
    choice = request.tool_choice
    if choice is None:
        return None
    if isinstance(choice, str):
        return _CHOICE[choice]
    names = {tool.function.name for tool in request.tools or () if isinstance(tool, wire.FunctionTool)}
    if isinstance(choice, wire.NamedToolChoice):
        if choice.function.name not in names:
            raise InvalidArgument("Names no function of `tools`", "tool_choice.function.name")
        return {"allowed_tools": {"mode": "any", "tools": [choice.function.name]}}
    assert isinstance(choice, wire.AllowedToolsChoice)
    allowed = []
    for index, tool in enumerate(choice.allowed_tools.tools):
        function = tool.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if tool.get("type") != "function" or name not in names:
            raise InvalidArgument("Names no function of `tools`", f"tool_choice.allowed_tools.tools[{index}]")
        allowed.append(name)
    mode = _CHOICE[choice.allowed_tools.mode]
    return {"allowed_tools": {"mode": mode, "tools": allowed}}


def _format(
    response_format: wire.TextFormat | wire.JsonObjectFormat | wire.JsonSchemaFormat | None,
) -> dict[str, Any] | None:
    if isinstance(response_format, wire.JsonObjectFormat):
        return dict(_JSON)
    if isinstance(response_format, wire.JsonSchemaFormat):
        schema = response_format.json_schema.schema
        return {**_JSON, "schema": schema} if schema is not None else dict(_JSON)
    return None
