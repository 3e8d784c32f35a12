"""A turn's input steps as the Responses API's input items, and their list pages, pure.

Each item's id is derived from its interaction's id and its step's place in the turn's input
(`msg_<interaction id>_in<index>`, `fc_`, `fco_`, `rs_`, `mcp_`), so a page's `after` and `before` name the
same item in any process. User steps are `message` items of role user (text as input_text, images as
input_image with their data: or http URL, other media as input_file), the model's steps replayed by the
client are assistant messages (output_text), calls and results are function_call / function_call_output,
thoughts are reasoning. The system and developer messages of a turn are its instructions (decode.py), not
items. Steps with no Responses form (Google's built-in tools') are not listed.
"""

from __future__ import annotations

from typing import Final

import msgspec

from ...errors import InvalidArgument
from ...protocol.content import Content, FunctionResultContent, ImageContent, TextContent
from ...protocol.steps import (
    FunctionCallStep,
    FunctionResultStep,
    McpServerToolCallStep,
    McpServerToolResultStep,
    ModelOutputStep,
    Step,
    ThoughtStep,
    UserInputStep,
)
from . import wire
from .encode import arguments_text, item_id, output_text_parts, reasoning_item, result_text

MAX_LIMIT: Final = 100
DEFAULT_LIMIT: Final = 20
#: our image resolutions -> OpenAI's `detail`
_DETAILS: Final = {"low": "low", "high": "high"}


class Page(msgspec.Struct, frozen=True, kw_only=True):
    after: str | None = None
    before: str | None = None
    limit: int = DEFAULT_LIMIT
    #: `asc` (the turn's order) or `desc` (OpenAI's default)
    order: str = "desc"


def input_items(interaction_id: str, steps: list[Step]) -> list[wire.InputItem]:
    """The turn's input, in its order."""
    items: list[wire.InputItem] = []
    calls: dict[str, wire.McpCall] = {}
    for index, step in enumerate(steps):
        slot = f"in{index}"
        if isinstance(step, UserInputStep):
            items.extend(_user(interaction_id, slot, step.content if isinstance(step.content, list) else []))
        elif isinstance(step, ModelOutputStep):
            parts = output_text_parts(step.content)
            items.append(
                wire.InputMessage(id=item_id("msg", interaction_id, slot), role="assistant", content=[*parts])
            )
        elif isinstance(step, FunctionCallStep):
            items.append(
                wire.FunctionCall(
                    id=item_id("fc", interaction_id, slot),
                    call_id=step.id,
                    name=step.name,
                    arguments=arguments_text(step.arguments),
                    status="completed",
                )
            )
        elif isinstance(step, FunctionResultStep):
            identifier = item_id("fco", interaction_id, slot)
            items.append(
                wire.FunctionCallOutput(id=identifier, call_id=step.call_id, output=result_text(step.result))
            )
        elif isinstance(step, ThoughtStep):
            items.append(reasoning_item(item_id("rs", interaction_id, slot), step, "completed"))
        elif isinstance(step, McpServerToolCallStep):
            call = calls[step.id] = _mcp_call(interaction_id, slot, step)
            items.append(call)
        elif isinstance(step, McpServerToolResultStep) and step.call_id in calls:
            calls[step.call_id].output = result_text(step.result)
    return items


def _user(interaction_id: str, slot: str, content: list[Content]) -> list[wire.InputItem]:
    """A user step's message, then a function_call_output item for each function result it holds (where
    the Vercel AI SDK puts them)."""
    parts = [part for part in (_part(each) for each in content) if part is not None]
    items: list[wire.InputItem] = [
        wire.InputMessage(id=item_id("msg", interaction_id, slot), role="user", content=[*parts])
    ]
    for number, each in enumerate(content):
        if isinstance(each, FunctionResultContent):
            items.append(
                wire.FunctionCallOutput(
                    id=item_id("fco", interaction_id, f"{slot}_{number}"),
                    call_id=each.call_id,
                    output=result_text(each.result),
                )
            )
    return items


def _part(part: Content) -> wire.InputContent | None:
    if isinstance(part, TextContent):
        return wire.InputText(text=part.text)
    if isinstance(part, FunctionResultContent):
        return None
    data, uri, mime = (getattr(part, key, None) for key in ("data", "uri", "mime_type"))
    url = f"data:{mime or 'application/octet-stream'};base64,{data}" if data else uri
    if isinstance(part, ImageContent):
        return wire.InputImage(image_url=url, detail=_DETAILS.get(part.resolution or "", "auto"))
    if data:
        return wire.InputFile(file_data=url)
    return wire.InputFile(file_url=uri) if uri else None


def _mcp_call(interaction_id: str, slot: str, step: McpServerToolCallStep) -> wire.McpCall:
    return wire.McpCall(
        id=item_id("mcp", interaction_id, slot),
        server_label=step.server_name,
        name=step.name,
        arguments=arguments_text(step.arguments),
    )


def page(items: list[wire.InputItem], at: Page) -> wire.ItemList:
    """One page of the items in `at.order`, between `at.after` and `at.before` (ids of items of the list):
    the first `at.limit` after `after`, or with `before` alone the last `at.limit` before it (paging
    back). `has_more`: more items lie beyond the page, in the direction it was read."""
    ordered = items if at.order == "asc" else items[::-1]
    ids = [item.id for item in ordered]
    start = _place(ids, at.after, "after") + 1 if at.after is not None else 0
    end = _place(ids, at.before, "before") if at.before is not None else len(ordered)
    window = ordered[start:end]
    backwards = at.before is not None and at.after is None
    chosen = window[-at.limit :] if backwards else window[: at.limit]
    return wire.ItemList(
        data=chosen,
        first_id=chosen[0].id if chosen else None,
        last_id=chosen[-1].id if chosen else None,
        has_more=len(window) > len(chosen),
    )


def _place(ids: list[str], wanted: str, name: str) -> int:
    try:
        return ids.index(wanted)
    except ValueError:
        raise InvalidArgument(f"No input item {wanted[:80]!r} in this response", name) from None


def page_of(after: str | None, before: str | None, limit: str | None, order: str | None) -> Page:
    """A page's query parameters, checked."""
    count = DEFAULT_LIMIT
    if limit is not None:
        if not limit.isdigit() or not 1 <= int(limit) <= MAX_LIMIT:
            raise InvalidArgument(f"Expected an integer from 1 to {MAX_LIMIT}", "limit")
        count = int(limit)
    if order not in (None, "asc", "desc"):
        raise InvalidArgument("Expected asc or desc", "order")
    return Page(after=after, before=before, limit=count, order=order or "desc")
