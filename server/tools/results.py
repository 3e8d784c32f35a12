"""An MCP tool result as a step shows it and the model reads it, bounded in size.

The `result`: the text when every content item is text (the items joined by a newline); the
`structuredContent` object when there is no content at all but there is one; otherwise the content list
as JSON objects in MCP's own shape (`{"type": "image", "data": ..., "mimeType": ...}`, `resource`,
`resource_link`, `audio`, and text items among them). Bounded: the result encoded as JSON is at most
`[tools] max_result_bytes`; a larger one becomes text, cut, that ends with a marker saying how many bytes
were cut (a non-text result is cut as its JSON text).
"""

from __future__ import annotations

from typing import Any

import mcp_types
import msgspec

_encoder = msgspec.json.Encoder()


def shape(result: mcp_types.CallToolResult) -> Any:
    content = result.content
    if content and all(isinstance(item, mcp_types.TextContent) for item in content):
        return "\n".join(item.text for item in content if isinstance(item, mcp_types.TextContent))
    if not content:
        return result.structured_content if result.structured_content is not None else ""
    return [item.model_dump(by_alias=True, mode="json", exclude_none=True) for item in content]


def marker(cut: int, total: int) -> str:
    return f"\n[... {cut} of {total} bytes cut: the result is longer than the server keeps]"


def bounded(result: Any, limit: int) -> Any:
    """The result, or, when its JSON is longer than `limit` bytes, its text (a non-text result: its JSON)
    cut to fit, with a marker counting the bytes of that text cut."""
    encoded = _encoder.encode(result)
    if len(encoded) <= limit:
        return result
    raw = result.encode() if isinstance(result, str) else encoded
    total = len(raw)
    keep = max(0, limit - len(marker(total, total)) - 2)
    while True:
        kept = raw[:keep].decode(errors="ignore")
        cut_text = kept + marker(total - len(kept.encode()), total)
        over = len(_encoder.encode(cut_text)) - limit
        if over <= 0 or keep == 0:
            return cut_text
        keep = max(0, keep - over)
