"""A Responses create body -> (our CreateRequest, this turn's input steps, warnings), pure.

What maps to what (the README's table, "Responses API"):

    model, stream, background, store (default true)  -> the same
    input                                            -> the input steps (inputs.py)
    instructions (+ system/developer messages)       -> system_instruction (this turn only, as OpenAI's)
    previous_response_id                             -> previous_interaction_id
    tools: function / mcp                            -> function / mcp_server tools (tools.py)
    tool_choice, max_output_tokens, temperature,
    top_p, reasoning.effort / .summary               -> generation_config (tool_choice, ..., thinking_level,
                                                        thinking_summaries)
    text.format: json_schema / json_object / text    -> response_format {type: text, mime_type, schema}
    metadata, user, safety_identifier                -> labels (openai_labels.py)

Accepted where ignoring them changes no answer: `truncation` (`disabled`; `auto` runs as `disabled`: this
server never drops input, and a conversation longer than the model's window fails as with `disabled`, so
the Response shows `disabled`), `include: ["reasoning.encrypted_content"]` (a reasoning item always carries
its signature) and `["message.input_image.image_url"]` (input items always show their image URL),
`parallel_tool_calls: true`, `service_tier` auto/default, `text.verbosity: "medium"`, `prompt_cache_key`,
`prompt_cache_retention`; `stream_options.include_obfuscation` is honoured by the stream (events.py pads the
deltas when it is true). Every other field OpenAI
defines is a 400 naming it (OpenAI's `param`); a field OpenAI does not define is an unknown field: a warning
kept on the record (Google's dialect shows it), or a 400 with `http.strict_unknown_fields`.
"""

from __future__ import annotations

from typing import Any, Final

from ...errors import InvalidArgument
from ...protocol.codec import decode_json, warnings_of
from ...protocol.interaction import CreateRequest
from ...protocol.steps import Step
from ...protocol.tools import GenerationConfig
from ..openai_labels import labels_of
from .inputs import decode_input
from .known import unknown_fields
from .settings import EFFORTS, SUMMARIES
from .tools import decode_tool_choice, decode_tools

#: fields OpenAI defines whose values this server takes as they are, or checks below
_READ: Final = frozenset(
    {
        "model",
        "input",
        "instructions",
        "previous_response_id",
        "store",
        "background",
        "stream",
        "stream_options",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "text",
        "reasoning",
        "max_output_tokens",
        "temperature",
        "top_p",
        "metadata",
        "truncation",
        "include",
        "user",
        "safety_identifier",
        "service_tier",
        "prompt_cache_key",
        "prompt_cache_retention",
    }
)
#: fields OpenAI defines that this server does not serve (a 400 unless null)
_NOT_SERVED: Final = frozenset(
    {
        "conversation",
        "prompt",
        "max_tool_calls",
        "top_logprobs",
        "context_management",
        "background_options",
        "moderation",
        "image",
        "access_programs",
        "prompt_cache_options",
    }
)
#: the `include` values honoured (module docstring)
INCLUDES: Final = frozenset({"reasoning.encrypted_content", "message.input_image.image_url"})


def decode_create(body: bytes, *, strict: bool = False) -> tuple[CreateRequest, list[Step], list[str]]:
    raw = decode_json(body)
    if not isinstance(raw, dict):
        raise InvalidArgument("The request body must be a JSON object")
    unknown = [("", key) for key in raw if key not in _READ and key not in _NOT_SERVED]
    unknown += unknown_fields(raw)
    if unknown and strict:
        path, name = unknown[0]
        raise InvalidArgument("Unknown field", f"{path}.{name}" if path else name)
    for key in sorted(_NOT_SERVED):
        if raw.get(key) is not None:
            raise InvalidArgument(f"`{key}` is not served by this server", key)
    request, steps, warnings = _request(raw)
    return request, steps, warnings_of(unknown) + warnings


def _request(raw: dict[str, Any]) -> tuple[CreateRequest, list[Step], list[str]]:
    inputs = decode_input(raw.get("input"))
    store = _flag(raw, "store", True)
    background = _flag(raw, "background", False)
    stream = _flag(raw, "stream", False)
    previous = _optional_string(raw, "previous_response_id")
    if not store and previous:
        raise InvalidArgument(
            "`store=false` cannot be combined with `previous_response_id`", "previous_response_id"
        )
    if background and not store:
        raise InvalidArgument("Background responses need `store=true`", "background")
    if raw.get("stream_options") is not None and not stream:
        raise InvalidArgument("`stream_options` is only valid with `stream=true`", "stream_options")
    _check_served(raw)
    tools, warnings = decode_tools(raw.get("tools"))
    system = [text for text in (_optional_string(raw, "instructions"), *inputs.system) if text]
    request = CreateRequest(
        model=_optional_string(raw, "model"),
        input=inputs.steps,
        system_instruction="\n\n".join(system) or None,
        tools=tools or None,
        generation_config=_generation(raw),
        response_format=_format(raw.get("text")),
        labels=labels_of(raw),
        previous_interaction_id=previous,
        store=store,
        background=background,
        stream=stream,
    )
    return request, inputs.steps, warnings


def _check_served(raw: dict[str, Any]) -> None:
    """The fields accepted only with the values whose ignoring changes no answer (module docstring)."""
    if raw.get("parallel_tool_calls") not in (None, True):
        raise InvalidArgument("Only `parallel_tool_calls: true` is served", "parallel_tool_calls")
    if raw.get("truncation") not in (None, "disabled", "auto"):
        raise InvalidArgument("Expected `truncation` auto or disabled", "truncation")
    if raw.get("service_tier") not in (None, "auto", "default"):
        raise InvalidArgument("Only the `auto` and `default` service tiers are served", "service_tier")
    include = raw.get("include")
    if include is not None:
        if not isinstance(include, list):
            raise InvalidArgument("Expected a list", "include")
        for index, value in enumerate(include):
            if value not in INCLUDES:
                shown = ", ".join(sorted(INCLUDES))
                raise InvalidArgument(f"Only {shown} can be included", f"include[{index}]")
    for key in ("prompt_cache_key", "prompt_cache_retention"):
        _optional_string(raw, key)


def _generation(raw: dict[str, Any]) -> GenerationConfig | None:
    effort, summary = _reasoning(raw.get("reasoning"))
    gen = GenerationConfig(
        temperature=_number(raw, "temperature", 0.0, 2.0),
        top_p=_number(raw, "top_p", 0.0, 1.0),
        max_output_tokens=_count(raw, "max_output_tokens"),
        thinking_level=effort,
        thinking_summaries=summary,
        tool_choice=decode_tool_choice(raw.get("tool_choice")),
    )
    return None if gen == GenerationConfig() else gen


def _reasoning(raw: Any) -> tuple[str | None, str | None]:
    if raw is None:
        return None, None
    if not isinstance(raw, dict):
        raise InvalidArgument("Expected an object", "reasoning")
    effort = raw.get("effort")
    if effort is not None and effort not in EFFORTS:
        raise InvalidArgument(
            "Expected `effort` " + ", ".join(EFFORTS) + " (a model's thinking cannot be turned off here)",
            "reasoning.effort",
        )
    summary = raw.get("summary", raw.get("generate_summary"))
    if summary is not None and summary not in SUMMARIES:
        raise InvalidArgument(
            "Only `summary: auto` is served: its length cannot be chosen", "reasoning.summary"
        )
    return effort, SUMMARIES.get(summary) if summary else None


def _format(raw: Any) -> dict[str, Any] | None:
    """`text` as our response_format: JSON with a schema, JSON without one, or text (the default)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise InvalidArgument("Expected an object", "text")
    if raw.get("verbosity") not in (None, "medium"):
        raise InvalidArgument("Only the default verbosity (medium) is served", "text.verbosity")
    fmt = raw.get("format")
    if fmt is None:
        return None
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "text", "mime_type": "application/json"}
    if kind == "json_schema":
        schema = fmt.get("schema")
        if not isinstance(schema, dict):
            raise InvalidArgument("Expected a JSON schema (an object)", "text.format.schema")
        if not isinstance(fmt.get("name"), str):
            raise InvalidArgument("Expected a string `name`", "text.format.name")
        return {"type": "text", "mime_type": "application/json", "schema": schema}
    raise InvalidArgument("Expected `type` text, json_object or json_schema", "text.format.type")


def _flag(raw: dict[str, Any], key: str, default: bool) -> bool:
    value = raw.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InvalidArgument("Expected true or false", key)
    return value


def _optional_string(raw: dict[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise InvalidArgument("Expected a string", key)
    return value


def _number(raw: dict[str, Any], key: str, low: float, high: float) -> float | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise InvalidArgument(f"Expected a number from {low:g} to {high:g}", key)
    return float(value)


def _count(raw: dict[str, Any], key: str) -> int | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument("Expected a positive integer", key)
    return value
