"""The `GenerateContentRequest` for an `UpstreamRequest`: contents, generation config, tools and safety."""

from __future__ import annotations

from typing import Any

from ...dialects.generate import wire
from ...protocol.tools import (
    THINKING_BUDGETS,
    CodeExecutionTool,
    ComputerUseTool,
    FileSearchTool,
    FunctionTool,
    GoogleMapsTool,
    GoogleSearchTool,
    Tool,
    UrlContextTool,
)
from ..base import UpstreamRequest
from ..emit import json_output, tool_choice
from .contents import build_contents
from .kind import KIND


def build_body(request: UpstreamRequest, backend: str = KIND) -> wire.GenerateContentRequest:
    config = request.config
    body = wire.GenerateContentRequest(contents=build_contents(request.history, backend))
    if config.system_instruction:
        body.system_instruction = wire.Content(parts=[wire.Part(text=config.system_instruction)])
    generation = _generation_config(request)
    if generation != wire.GenerationConfig():
        body.generation_config = generation
    tools, tool_config = _tools(request)
    body.tools = tools or None
    if tool_config != wire.ToolConfig():
        body.tool_config = tool_config
    if config.safety_settings:
        body.safety_settings = [_safety(s) for s in config.safety_settings]
    body.cached_content = config.cached_content or None
    return body


def _generation_config(request: UpstreamRequest) -> wire.GenerationConfig:
    config = request.config
    gen = config.generation_config
    out = wire.GenerationConfig()
    if gen is not None:
        out.temperature = gen.temperature
        out.top_p = gen.top_p
        out.top_k = gen.top_k
        out.seed = gen.seed
        out.stop_sequences = gen.stop_sequences
        out.max_output_tokens = gen.max_output_tokens
        thinking = _thinking(request)
        if thinking != wire.ThinkingConfig():
            out.thinking_config = thinking
        if gen.image_config is not None:
            image = gen.image_config
            out.image_config = wire.ImageConfig(aspect_ratio=image.aspect_ratio, image_size=image.image_size)
    wants_json, schema = json_output(config)
    if wants_json:
        out.response_mime_type = "application/json"
        out.response_json_schema = schema
    if config.response_modalities:
        out.response_modalities = [m.upper() for m in config.response_modalities]
    return out


def _thinking(request: UpstreamRequest) -> wire.ThinkingConfig:
    gen = request.config.generation_config
    thinking = wire.ThinkingConfig()
    if gen is None:
        return thinking
    if gen.thinking_level:
        if request.upstream_model.removeprefix("models/").startswith("gemini-2"):
            # Gemini 2.x takes a token budget; later models take a level
            thinking.thinking_budget = THINKING_BUDGETS.get(gen.thinking_level, 4096)
        else:
            level = "high" if gen.thinking_level == "xhigh" else gen.thinking_level
            thinking.thinking_level = level.upper()
    if gen.thinking_summaries:
        thinking.include_thoughts = gen.thinking_summaries != "none"
    return thinking


def _tools(request: UpstreamRequest) -> tuple[list[wire.Tool], wire.ToolConfig]:
    tool_config = wire.ToolConfig()
    functions = [_declaration(t) for t in request.config.tools or [] if isinstance(t, FunctionTool)]
    tools = [wire.Tool(function_declarations=functions)] if functions else []
    for tool in request.config.tools or []:
        built_in = _built_in(tool, tool_config)
        if built_in is not None:
            tools.append(built_in)
    mode, names = tool_choice(request.config)
    if mode:
        tool_config.function_calling_config = wire.FunctionCallingConfig(
            mode=mode.upper(), allowed_function_names=names
        )
    return tools, tool_config


def _declaration(tool: FunctionTool) -> wire.FunctionDeclaration:
    return wire.FunctionDeclaration(
        name=tool.name, description=tool.description or None, parameters_json_schema=tool.parameters
    )


def _built_in(tool: Tool, tool_config: wire.ToolConfig) -> wire.Tool | None:
    """A tool Gemini runs itself (None for a function, or a tool it does not have); Maps may also set
    where the user is, in `tool_config`."""
    if isinstance(tool, GoogleSearchTool):
        return wire.Tool(google_search=wire.Empty())
    if isinstance(tool, CodeExecutionTool):
        return wire.Tool(code_execution=wire.Empty())
    if isinstance(tool, UrlContextTool):
        return wire.Tool(url_context=wire.Empty())
    if isinstance(tool, GoogleMapsTool):
        if tool.latitude is not None and tool.longitude is not None:
            lat_lng = wire.LatLng(latitude=tool.latitude, longitude=tool.longitude)
            tool_config.retrieval_config = wire.RetrievalConfig(lat_lng=lat_lng)
        return wire.Tool(google_maps=wire.GoogleMaps(enable_widget=tool.enable_widget or None))
    if isinstance(tool, FileSearchTool):
        spec = wire.FileSearch(
            file_search_store_names=tool.file_search_store_names,
            top_k=tool.top_k,
            metadata_filter=tool.metadata_filter,
        )
        return wire.Tool(file_search=spec)
    if isinstance(tool, ComputerUseTool):
        use = wire.ComputerUse(
            environment=f"ENVIRONMENT_{(tool.environment or 'browser').upper()}",
            excluded_predefined_functions=tool.excluded_predefined_functions or None,
        )
        return wire.Tool(computer_use=use)
    return None


def _safety(setting: dict[str, Any]) -> wire.SafetySetting:
    category = str(setting.get("type", "")).upper()
    return wire.SafetySetting(
        category=category if category.startswith("HARM_CATEGORY_") else f"HARM_CATEGORY_{category}",
        threshold=str(setting.get("threshold", "")).upper(),
    )
