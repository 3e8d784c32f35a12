"""Tools and generation settings (spec §5)."""

from __future__ import annotations

from typing import Any

from .base import OpenMember, Tagged, UnknownMember, Wire, open_union, register


@open_union
class Tool(OpenMember):
    __slots__ = ()
    union_name = "tool"


class UnknownTool(UnknownMember, Tool):
    __slots__ = ()


class FunctionTool(Tagged, Tool, tag="function"):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


class GoogleSearchTool(Tagged, Tool, tag="google_search"):
    search_types: list[str] | None = None


class CodeExecutionTool(Tagged, Tool, tag="code_execution"):
    pass


class UrlContextTool(Tagged, Tool, tag="url_context"):
    pass


class ComputerUseTool(Tagged, Tool, tag="computer_use"):
    environment: str | None = None
    excluded_predefined_functions: list[str] | None = None
    disabled_safety_policies: list[str] | None = None
    enable_prompt_injection_detection: bool | None = None


class McpServerTool(Tagged, Tool, tag="mcp_server"):
    name: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    allowed_tools: list[dict[str, Any]] | None = None


class FileSearchTool(Tagged, Tool, tag="file_search"):
    file_search_store_names: list[str] | None = None
    top_k: int | None = None
    metadata_filter: str | None = None


class GoogleMapsTool(Tagged, Tool, tag="google_maps"):
    enable_widget: bool | None = None
    latitude: float | None = None
    longitude: float | None = None


class RetrievalTool(Tagged, Tool, tag="retrieval"):
    retrieval_types: list[str] | None = None
    vertex_ai_search_config: dict[str, Any] | None = None
    rag_store_config: dict[str, Any] | None = None
    exa_ai_search_config: dict[str, Any] | None = None
    parallel_ai_search_config: dict[str, Any] | None = None


register(
    Tool,
    UnknownTool,
    FunctionTool,
    GoogleSearchTool,
    CodeExecutionTool,
    UrlContextTool,
    ComputerUseTool,
    McpServerTool,
    FileSearchTool,
    GoogleMapsTool,
    RetrievalTool,
)


class ImageConfig(Wire):
    aspect_ratio: str | None = None
    image_size: str | None = None


#: the token budget each thinking level stands for, where a provider (or a dialect) counts thinking in tokens
THINKING_BUDGETS = {"minimal": 512, "low": 1024, "medium": 4096, "high": 16384, "xhigh": 32768}


class GenerationConfig(Wire):
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None
    stop_sequences: list[str] | None = None
    max_output_tokens: int | None = None
    thinking_level: str | None = None
    thinking_summaries: str | None = None
    tool_choice: str | dict[str, Any] | None = None
    speech_config: list[dict[str, Any]] | dict[str, Any] | None = None
    image_config: ImageConfig | None = None
    video_config: dict[str, Any] | None = None
    transcription_config: dict[str, Any] | None = None
