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


MediaContent = ImageContent | AudioContent | DocumentContent | VideoContent

register(Content, UnknownContent, TextContent, ImageContent, AudioContent, DocumentContent, VideoContent)


def text_of(items: list[Content] | None) -> str:
    """The concatenated text of the text items."""
    return "".join(item.text for item in items or () if isinstance(item, TextContent))
