"""A generateContent body -> our create request (stateless: store false), its input steps, its warnings.

    contents, systemInstruction            -> the input steps, system_instruction (contents.py)
    tools: functionDeclarations            -> function tools (parametersJsonSchema, or `parameters` in
                                              Google's Schema, schemas.py)
    tools: googleSearch, codeExecution,    -> the built-in tools of the same names (a backend that cannot
      urlContext, googleMaps, fileSearch,     run one answers a 400 naming it)
      computerUse
    toolConfig.functionCallingConfig       -> generation_config.tool_choice (AUTO/ANY/NONE/VALIDATED,
                                              allowedFunctionNames as allowed_tools)
    toolConfig.retrievalConfig.latLng      -> the googleMaps tool's latitude and longitude
    generationConfig: temperature, topP,   -> generation_config's
      topK, seed, stopSequences,
      maxOutputTokens, imageConfig
    thinkingConfig: thinkingLevel,         -> thinking_level (a budget as the lowest level that covers
      thinkingBudget, includeThoughts         it), thinking_summaries "auto"
    responseMimeType application/json,     -> response_format {type: text, mime_type, schema}
      responseJsonSchema / responseSchema
    responseModalities                     -> response_modalities
    safetySettings                         -> safety_settings (the handler warns where the backend
                                              cannot apply them)

Refused with a 400 naming the field: `cachedContent` (this server keeps no cached contents),
`candidateCount` other than 1, non-zero `presencePenalty` / `frequencyPenalty`, `responseLogprobs`,
`logprobs`, a `responseMimeType` other than text/plain and application/json. Unknown fields: a warning (the
`x-ix-warnings` header), or a 400 with `http.strict_unknown_fields`. Field names may be camelCase or
snake_case, as Google's parser takes them (names.py).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from ...errors import InvalidArgument
from ...protocol.codec import convert, decode_json, find_unknown_fields, warnings_of
from ...protocol.interaction import CreateRequest
from ...protocol.steps import Step
from ...protocol.strict import decoder as strict_decoder
from ...protocol.tools import (
    THINKING_BUDGETS,
    CodeExecutionTool,
    ComputerUseTool,
    FileSearchTool,
    FunctionTool,
    GenerationConfig,
    GoogleMapsTool,
    GoogleSearchTool,
    ImageConfig,
    Tool,
    UrlContextTool,
)
from . import wire
from .contents import steps_of, system_text
from .names import camel_keys
from .schemas import json_schema

#: a JSON key in snake_case (`"system_instruction":`): a body with none needs no renaming
_SNAKE_KEY = re.compile(rb'"[a-zA-Z0-9]+_[a-zA-Z0-9_]*"\s*:')
_MODES = {"AUTO": "auto", "ANY": "any", "NONE": "none", "VALIDATED": "validated"}
_TEXT_TYPES = (None, "text/plain", "application/json")


class Decoded(msgspec.Struct, kw_only=True):
    create: CreateRequest
    steps: list[Step]
    warnings: list[str]


def read(body: bytes, tp: type[Any], *, strict: bool) -> tuple[Any, list[str]]:
    """The body as `tp` (either spelling of its names) and the warnings of its unknown fields: what
    `read_whole` answers, at a fifth of its cost for a body of camelCase names and no unknown field (the
    SDKs'), which `tp`'s strict twin decodes from the bytes at once."""
    try:
        return strict_decoder(tp).decode(body), []
    except (msgspec.DecodeError, RecursionError):
        # an unknown field, a snake_case name, or an error: the whole way finds which, and says it
        return read_whole(body, tp, strict=strict)


def read_whole(body: bytes, tp: type[Any], *, strict: bool) -> tuple[Any, list[str]]:
    """`read` the whole way: to Python objects, renamed to camelCase where a name is snake_case, then
    converted to `tp`, its unknown fields found by a walk of the objects."""
    raw = decode_json(body)
    if not isinstance(raw, dict):
        raise InvalidArgument("The request body must be a JSON object")
    if _SNAKE_KEY.search(body):  # most bodies are camelCase (the SDKs'): not walked
        raw = camel_keys(raw, tp)
    parsed = convert(raw, tp)
    unknown = find_unknown_fields(raw, tp)
    if unknown and strict:
        path, name = unknown[0]
        raise InvalidArgument("Unknown field", f"{path}.{name}" if path else name)
    return parsed, warnings_of(unknown)


def decode(body: bytes, model: str, *, stream: bool, strict: bool = False) -> Decoded:
    request, warnings = read(body, wire.GenerateContentRequest, strict=strict)
    return of_request(request, model, stream=stream, warnings=warnings)


def of_request(
    request: wire.GenerateContentRequest, model: str, *, stream: bool, warnings: list[str]
) -> Decoded:
    if request.cached_content:
        raise InvalidArgument(
            "This server keeps no cached contents: send the contents themselves", "cachedContent"
        )
    if not request.contents:
        raise InvalidArgument("At least one content is required", "contents")
    tools, tool_choice = _tools(request)
    generation, response_format, modalities = _generation(request.generation_config, warnings)
    if tool_choice is not None:
        generation = generation or GenerationConfig()
        generation.tool_choice = tool_choice
    safety = [{"type": s.category, "threshold": s.threshold} for s in request.safety_settings or []]
    create = CreateRequest(
        model=model,
        system_instruction=system_text(request.system_instruction),
        tools=tools or None,
        generation_config=generation,
        response_format=response_format,
        response_modalities=modalities,
        safety_settings=safety or None,
        store=False,
        stream=stream,
    )
    return Decoded(create=create, steps=steps_of(request.contents), warnings=warnings)


def _tools(request: wire.GenerateContentRequest) -> tuple[list[Tool], str | dict[str, Any] | None]:
    tools: list[Tool] = []
    for index, tool in enumerate(request.tools or []):
        field = f"tools[{index}]"
        for n, declaration in enumerate(tool.function_declarations or []):
            tools.append(_function(declaration, f"{field}.functionDeclarations[{n}]"))
        tools.extend(_built_in(tool))
    config = request.tool_config
    calling = config.function_calling_config if config else None
    if config is not None and config.retrieval_config is not None:
        where = config.retrieval_config.lat_lng
        maps = [tool for tool in tools if isinstance(tool, GoogleMapsTool)]
        if not maps:
            raise InvalidArgument(
                "A location is for the googleMaps tool, which is not in `tools`", "toolConfig"
            )
        maps[0].latitude, maps[0].longitude = where.latitude, where.longitude
    if calling is None:
        return tools, None
    mode = _MODES.get(calling.mode.upper())
    if mode is None:
        raise InvalidArgument(
            "Expected AUTO, ANY, NONE or VALIDATED", "toolConfig.functionCallingConfig.mode"
        )
    if calling.allowed_function_names:
        return tools, {"allowed_tools": {"mode": mode, "tools": list(calling.allowed_function_names)}}
    return tools, mode


def _function(declaration: wire.FunctionDeclaration, field: str) -> FunctionTool:
    parameters = declaration.parameters_json_schema
    if parameters is None and declaration.parameters is not None:
        parameters = json_schema(declaration.parameters, f"{field}.parameters")
    return FunctionTool(name=declaration.name, description=declaration.description, parameters=parameters)


def _built_in(tool: wire.Tool) -> list[Tool]:
    found: list[Tool] = []
    if tool.google_search is not None:
        found.append(GoogleSearchTool())
    if tool.code_execution is not None:
        found.append(CodeExecutionTool())
    if tool.url_context is not None:
        found.append(UrlContextTool())
    if tool.google_maps is not None:
        found.append(GoogleMapsTool(enable_widget=tool.google_maps.enable_widget))
    if tool.file_search is not None:
        spec = tool.file_search
        found.append(
            FileSearchTool(
                file_search_store_names=spec.file_search_store_names,
                top_k=spec.top_k,
                metadata_filter=spec.metadata_filter,
            )
        )
    if tool.computer_use is not None:
        use = tool.computer_use
        environment = use.environment.removeprefix("ENVIRONMENT_").lower()
        found.append(
            ComputerUseTool(
                environment=environment, excluded_predefined_functions=use.excluded_predefined_functions
            )
        )
    return found


def _generation(
    config: wire.GenerationConfig | None, warnings: list[str]
) -> tuple[GenerationConfig | None, Any, list[str] | None]:
    """(generation_config, response_format, response_modalities)."""
    if config is None:
        return None, None, None
    _refuse_unserved(config)
    out = GenerationConfig(
        temperature=config.temperature,
        top_p=config.top_p,
        top_k=config.top_k,
        seed=config.seed,
        stop_sequences=config.stop_sequences,
        max_output_tokens=config.max_output_tokens,
    )
    if config.image_config is not None:
        image = config.image_config
        out.image_config = ImageConfig(aspect_ratio=image.aspect_ratio, image_size=image.image_size)
    _thinking(config.thinking_config, out, warnings)
    if config.media_resolution:
        warnings.append("generationConfig.mediaResolution: not applied (each part is sent as it is)")
    modalities = [m.lower() for m in config.response_modalities] if config.response_modalities else None
    return (out if out != GenerationConfig() else None), _format(config), modalities


def _refuse_unserved(config: wire.GenerationConfig) -> None:
    field = "generationConfig"
    if config.candidate_count not in (None, 1):
        raise InvalidArgument("Only one candidate is served (candidateCount 1)", f"{field}.candidateCount")
    for name, value in (
        ("presencePenalty", config.presence_penalty),
        ("frequencyPenalty", config.frequency_penalty),
    ):
        if value:
            raise InvalidArgument("Not served here (0 or absent only)", f"{field}.{name}")
    if config.response_logprobs or config.logprobs:
        name = "responseLogprobs" if config.response_logprobs else "logprobs"
        raise InvalidArgument("Log probabilities are not served here", f"{field}.{name}")
    if config.response_mime_type not in _TEXT_TYPES:
        raise InvalidArgument("Expected text/plain or application/json", f"{field}.responseMimeType")


def _thinking(config: wire.ThinkingConfig | None, out: GenerationConfig, warnings: list[str]) -> None:
    if config is None:
        return
    if config.thinking_level:
        out.thinking_level = config.thinking_level.lower()
    elif config.thinking_budget is not None and config.thinking_budget >= 0:
        budget = config.thinking_budget
        level = next((name for name, tokens in THINKING_BUDGETS.items() if tokens >= budget), "xhigh")
        out.thinking_level = level
        if budget != THINKING_BUDGETS[level]:
            warnings.append(
                f"generationConfig.thinkingConfig.thinkingBudget: {budget} runs as the thinking level "
                f"{level} ({THINKING_BUDGETS[level]} tokens where a backend counts them)"
            )
    if config.include_thoughts:
        out.thinking_summaries = "auto"


def _format(config: wire.GenerationConfig) -> dict[str, Any] | None:
    schema = config.response_json_schema
    if schema is None and config.response_schema is not None:
        schema = json_schema(config.response_schema, "generationConfig.responseSchema")
    if config.response_mime_type != "application/json":
        if schema is not None:
            raise InvalidArgument("A schema needs responseMimeType application/json", "generationConfig")
        return None
    fmt: dict[str, Any] = {"type": "text", "mime_type": "application/json"}
    if schema is not None:
        fmt["schema"] = schema
    return fmt
