"""Step deltas (spec §7): the increments carried by `step.delta` events."""

from __future__ import annotations

from typing import Any

from .base import OpenMember, Tagged, UnknownMember, open_union, register
from .content import Content


@open_union
class Delta(OpenMember):
    __slots__ = ()
    union_name = "delta"


class UnknownDelta(UnknownMember, Delta):
    __slots__ = ()


class TextDelta(Tagged, Delta, tag="text"):
    text: str


class ImageDelta(Tagged, Delta, tag="image"):
    data: str | None = None
    uri: str | None = None
    mime_type: str | None = None
    resolution: str | None = None


class AudioDelta(Tagged, Delta, tag="audio"):
    data: str | None = None
    uri: str | None = None
    mime_type: str | None = None
    rate: int | None = None
    sample_rate: int | None = None
    channels: int | None = None


class VideoDelta(Tagged, Delta, tag="video"):
    data: str | None = None
    uri: str | None = None
    mime_type: str | None = None
    resolution: str | None = None


class DocumentDelta(Tagged, Delta, tag="document"):
    data: str | None = None
    uri: str | None = None
    mime_type: str | None = None


class ThoughtSummaryDelta(Tagged, Delta, tag="thought_summary"):
    content: Content


class ThoughtSignatureDelta(Tagged, Delta, tag="thought_signature"):
    signature: str


class TextAnnotationDelta(Tagged, Delta, tag="text_annotation_delta"):
    annotations: list[dict[str, Any]] = []


class ArgumentsDelta(Tagged, Delta, tag="arguments_delta"):
    """A fragment of a function call's JSON arguments, as a string."""

    arguments: str


class CodeExecutionCallDelta(Tagged, Delta, tag="code_execution_call"):
    arguments: dict[str, Any] | None = None
    signature: str | None = None


class CodeExecutionResultDelta(Tagged, Delta, tag="code_execution_result"):
    result: str | None = None
    is_error: bool | None = None
    signature: str | None = None


class GoogleSearchCallDelta(Tagged, Delta, tag="google_search_call"):
    arguments: dict[str, Any] | None = None


class GoogleSearchResultDelta(Tagged, Delta, tag="google_search_result"):
    result: list[Any] | None = None


class UrlContextCallDelta(Tagged, Delta, tag="url_context_call"):
    arguments: dict[str, Any] | None = None


class UrlContextResultDelta(Tagged, Delta, tag="url_context_result"):
    result: list[Any] | None = None


class McpServerToolCallDelta(Tagged, Delta, tag="mcp_server_tool_call"):
    name: str | None = None
    server_name: str | None = None
    arguments: dict[str, Any] | None = None


class McpServerToolResultDelta(Tagged, Delta, tag="mcp_server_tool_result"):
    result: Any = None
    name: str | None = None
    server_name: str | None = None


class FunctionResultDelta(Tagged, Delta, tag="function_result"):
    result: Any = None
    name: str | None = None
    is_error: bool | None = None


class FileSearchCallDelta(Tagged, Delta, tag="file_search_call"):
    pass


class FileSearchResultDelta(Tagged, Delta, tag="file_search_result"):
    result: Any = None


class GoogleMapsCallDelta(Tagged, Delta, tag="google_maps_call"):
    arguments: dict[str, Any] | None = None


class GoogleMapsResultDelta(Tagged, Delta, tag="google_maps_result"):
    result: Any = None


class RetrievalCallDelta(Tagged, Delta, tag="retrieval_call"):
    arguments: dict[str, Any] | None = None


class RetrievalResultDelta(Tagged, Delta, tag="retrieval_result"):
    result: Any = None


class ProcessingCallDelta(Tagged, Delta, tag="processing_call"):
    pass


class ProcessingResultDelta(Tagged, Delta, tag="processing_result"):
    result: Any = None


register(
    Delta,
    UnknownDelta,
    TextDelta,
    ImageDelta,
    AudioDelta,
    VideoDelta,
    DocumentDelta,
    ThoughtSummaryDelta,
    ThoughtSignatureDelta,
    TextAnnotationDelta,
    ArgumentsDelta,
    CodeExecutionCallDelta,
    CodeExecutionResultDelta,
    GoogleSearchCallDelta,
    GoogleSearchResultDelta,
    UrlContextCallDelta,
    UrlContextResultDelta,
    McpServerToolCallDelta,
    McpServerToolResultDelta,
    FunctionResultDelta,
    FileSearchCallDelta,
    FileSearchResultDelta,
    GoogleMapsCallDelta,
    GoogleMapsResultDelta,
    RetrievalCallDelta,
    RetrievalResultDelta,
    ProcessingCallDelta,
    ProcessingResultDelta,
)
