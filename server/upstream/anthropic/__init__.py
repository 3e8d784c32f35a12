"""Anthropic's Messages API: `/v1/messages` with `"stream": true`.

Named SSE events whose name equals `data.type`: message_start, then per content block a
content_block_start / content_block_delta* / content_block_stop, then message_delta (stop reason, cumulative
usage) and message_stop; `ping` anywhere, and an `error` event can arrive after the 200. Thinking blocks end
with a signature and must come back byte for byte (only to Anthropic); redacted thinking is opaque and is
kept whole inside the wrapped signature of a thought step with no summary.

`wire` describes the format, `request` writes it, `decode` reads it, `backend` sends it.
"""

from .backend import AnthropicBackend
from .decode import ERROR_STATUS, AnthropicDecoder, map_usage, stream_error
from .request import build_body, build_messages, check_content, content_block
from .wire import API_VERSION, KIND

__all__ = [
    "API_VERSION",
    "ERROR_STATUS",
    "KIND",
    "AnthropicBackend",
    "AnthropicDecoder",
    "build_body",
    "build_messages",
    "check_content",
    "content_block",
    "map_usage",
    "stream_error",
]
