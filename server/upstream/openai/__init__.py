"""Any OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp, LM Studio): `/v1/chat/completions`.

Chunks are `data: {chat.completion.chunk}` events ending in `data: [DONE]`; with `include_usage` a last
chunk with `choices: []` carries the usage. Reasoning arrives as `delta.reasoning_content` (DeepSeek, vLLM)
or `delta.reasoning` (Ollama, OpenRouter) and becomes thought steps; chat completions have no signature to
send back, so thoughts are never replayed here.

`wire` describes the format, `request` writes it, `decode` reads it, `backend` sends it.
"""

from .backend import OpenAIBackend
from .decode import OpenAIDecoder, map_usage, stream_error
from .request import build_body, build_messages, check_content, content_part
from .wire import KIND

__all__ = [
    "KIND",
    "OpenAIBackend",
    "OpenAIDecoder",
    "build_body",
    "build_messages",
    "check_content",
    "content_part",
    "map_usage",
    "stream_error",
]
