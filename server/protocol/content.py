"""Content items (spec §7): text and media blocks inside steps."""

from __future__ import annotations

from typing import Any

from .base import OpenMember, Tagged, UnknownMember, open_union, register


@open_union
class Content(OpenMember):
    __slots__ = ()
    union_name = "content"


class UnknownContent(UnknownMember, Content):
    __slots__ = ()


class TextContent(Tagged, Content, tag="text"):
    text: str
    annotations: list[dict[str, Any]] | None = None


class ImageContent(Tagged, Content, tag="image"):
    data: str | None = None
    uri: str | None = None
    mime_type: str | None = None
    resolution: str | None = None


class AudioContent(Tagged, Content, tag="audio"):
    data: str | None = None
    uri: str | None = None
    mime_type: str | None = None
    sample_rate: int | None = None
    channels: int | None = None


class DocumentContent(Tagged, Content, tag="document"):
    data: str | None = None
    uri: str | None = None
    mime_type: str | None = None


class VideoContent(Tagged, Content, tag="video"):
    data: str | None = None
    uri: str | None = None
    mime_type: str | None = None
    resolution: str | None = None
    name: str | None = None
    processing: dict[str, Any] | None = None


class FunctionResultContent(Tagged, Content, tag="function_result"):
    """A function's result as an item of a `user_input` step, where the Vercel AI SDK (`@ai-sdk/google`)
    puts each tool result, against Google's hosted API that takes it as the result of its call. Google's
    own SDKs send it as a `function_result` step instead (steps.py): both mean the same to the model
    (runner/history.py `model_steps`), and each is stored and returned as it came."""

    call_id: str
    result: Any = None
    name: str | None = None
    is_error: bool | None = None
    #: declared by the AI SDK's type, kept and returned; no provider takes a signature on a result
    signature: str | None = None


MediaContent = ImageContent | AudioContent | DocumentContent | VideoContent

register(
    Content,
    UnknownContent,
    TextContent,
    ImageContent,
    AudioContent,
    DocumentContent,
    VideoContent,
    FunctionResultContent,
)


def text_of(items: list[Content] | None) -> str:
    """The concatenated text of the text items."""
    return "".join(item.text for item in items or () if isinstance(item, TextContent))
