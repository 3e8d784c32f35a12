"""Steps (spec §7): the timeline of an interaction, as input and as output."""

from __future__ import annotations

from typing import Any

from .base import OpenMember, Tagged, UnknownMember, open_union, register
from .content import Content, TextContent


@open_union
class Step(OpenMember):
    __slots__ = ()
    union_name = "step"


class UnknownStep(UnknownMember, Step):
    __slots__ = ()


# `content` defaults to None and becomes a list after decoding: a default of [] would leave an empty list
# out of the JSON, and strict clients (sttp-ai) need `content` on every user_input and model_output step.


class UserInputStep(Tagged, Step, tag="user_input"):
    content: list[Content] | str = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        # Some clients send a bare string; stored steps always hold a content list.
        if isinstance(self.content, str):
            self.content = [TextContent(text=self.content)]
        elif self.content is None:
            self.content = []


class ModelOutputStep(Tagged, Step, tag="model_output"):
    content: list[Content] = None  # type: ignore[assignment]
    error: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.content is None:
            self.content = []


class ThoughtStep(Tagged, Step, tag="thought"):
    signature: str | None = None
    summary: list[Content] | None = None
    # sttp-ai replays thoughts with `content` instead of `summary`
    content: list[Content] | None = None


class FunctionCallStep(Tagged, Step, tag="function_call"):
    id: str
    name: str
    # None, not {}, for the same reason as `content` above: a call without arguments must still carry
    # `arguments: {}`, or the SDK yields `arguments=None` and `fn(**call.arguments)` fails.
    arguments: dict[str, Any] = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.arguments is None:
            self.arguments = {}


class FunctionResultStep(Tagged, Step, tag="function_result"):
    call_id: str
    result: Any = None
    name: str | None = None
    is_error: bool | None = None


class CodeExecutionCallStep(Tagged, Step, tag="code_execution_call"):
    id: str
    arguments: dict[str, Any] = {}
    signature: str | None = None


class CodeExecutionResultStep(Tagged, Step, tag="code_execution_result"):
    call_id: str
    result: Any = None
    is_error: bool | None = None
    signature: str | None = None


class GoogleSearchCallStep(Tagged, Step, tag="google_search_call"):
    id: str
    arguments: dict[str, Any] = {}
    search_type: str | None = None
    signature: str | None = None


class GoogleSearchResultStep(Tagged, Step, tag="google_search_result"):
    call_id: str
    result: Any = None
    is_error: bool | None = None
    signature: str | None = None


class UrlContextCallStep(Tagged, Step, tag="url_context_call"):
    id: str
    arguments: dict[str, Any] = {}
    signature: str | None = None


class UrlContextResultStep(Tagged, Step, tag="url_context_result"):
    call_id: str
    result: Any = None
    is_error: bool | None = None
    signature: str | None = None


class McpServerToolCallStep(Tagged, Step, tag="mcp_server_tool_call"):
    id: str
    name: str
    server_name: str
    arguments: dict[str, Any] = {}


class McpServerToolResultStep(Tagged, Step, tag="mcp_server_tool_result"):
    call_id: str
    result: Any = None
    name: str | None = None
    server_name: str | None = None


class FileSearchCallStep(Tagged, Step, tag="file_search_call"):
    id: str
    signature: str | None = None


class FileSearchResultStep(Tagged, Step, tag="file_search_result"):
    call_id: str
    result: Any = None
    signature: str | None = None


class GoogleMapsCallStep(Tagged, Step, tag="google_maps_call"):
    id: str
    arguments: dict[str, Any] | None = None
    signature: str | None = None


class GoogleMapsResultStep(Tagged, Step, tag="google_maps_result"):
    call_id: str
    result: Any = None
    signature: str | None = None


class RetrievalCallStep(Tagged, Step, tag="retrieval_call"):
    id: str
    arguments: dict[str, Any] = {}
    retrieval_type: str | None = None
    signature: str | None = None


class RetrievalResultStep(Tagged, Step, tag="retrieval_result"):
    call_id: str
    result: Any = None
    is_error: bool | None = None
    signature: str | None = None


class ProcessingCallStep(Tagged, Step, tag="processing_call"):
    id: str
    signature: str | None = None


class ProcessingResultStep(Tagged, Step, tag="processing_result"):
    call_id: str
    result: Any = None
    signature: str | None = None


register(
    Step,
    UnknownStep,
    UserInputStep,
    ModelOutputStep,
    ThoughtStep,
    FunctionCallStep,
    FunctionResultStep,
    CodeExecutionCallStep,
    CodeExecutionResultStep,
    GoogleSearchCallStep,
    GoogleSearchResultStep,
    UrlContextCallStep,
    UrlContextResultStep,
    McpServerToolCallStep,
    McpServerToolResultStep,
    FileSearchCallStep,
    FileSearchResultStep,
    GoogleMapsCallStep,
    GoogleMapsResultStep,
    RetrievalCallStep,
    RetrievalResultStep,
    ProcessingCallStep,
    ProcessingResultStep,
)
