"""Google's Gemini API: `models/{m}:streamGenerateContent?alt=sse`.

Each SSE event is one `GenerateContentResponse`; there is no `[DONE]`, the stream ends when the body does.
Thought signatures ride on parts: on a thought part, on the first function call of a step, or on a (possibly
empty) trailing text part. A signature on a thought part stays in that thought step; one on any other part
becomes a signature-only thought step placed right before that part's step (after it, for text), and is
attached again to the next part when the history is replayed, which is where Gemini validates it.

`wire` describes the format, `contents` and `request` write it, `decode` reads it, `backend` sends it.
"""

from .backend import GeminiBackend
from .contents import build_contents, content_part
from .decode import GeminiDecoder, map_usage
from .kind import KIND
from .request import build_body

__all__ = [
    "KIND",
    "GeminiBackend",
    "GeminiDecoder",
    "build_body",
    "build_contents",
    "content_part",
    "map_usage",
]
