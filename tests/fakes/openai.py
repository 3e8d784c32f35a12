"""Scripts for a fake OpenAI-compatible `/v1/chat/completions` stream, ending in `data: [DONE]`."""

from __future__ import annotations

from typing import Any, Unpack

from .http import Knobs, Script, json_error, sse


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "fake-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        "usage": None,
    }


def usage_chunk(prompt: int = 9, completion: int = 4, cached: int = 0, reasoning: int = 0) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "fake-model",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
            "completion_tokens_details": {"reasoning_tokens": reasoning},
        },
    }


def script(chunks: list[dict[str, Any]], done: bool = True, **knobs: Unpack[Knobs]) -> Script:
    frames = [sse(c) for c in chunks]
    if done:
        frames.append(sse("[DONE]"))
    return Script(chunks=frames, **knobs)


def openai_text_script(
    text: str = "Hello world",
    finish: str = "stop",
    usage: dict[str, Any] | None = None,
    **knobs: Unpack[Knobs],
) -> Script:
    words = text.split(" ")
    pieces = [w if i == 0 else " " + w for i, w in enumerate(words)]
    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": p}) for p in pieces]
    chunks.append(chunk({}, finish=finish))
    chunks.append(usage or usage_chunk())
    return script(chunks, **knobs)


def openai_reasoning_script(reasoning: str = "Think.", text: str = "Done", **knobs: Unpack[Knobs]) -> Script:
    chunks = [
        chunk({"role": "assistant", "content": None, "reasoning_content": reasoning}),
        chunk({"content": text}),
        chunk({}, finish="stop"),
        usage_chunk(completion=10, reasoning=6),
    ]
    return script(chunks, **knobs)


def openai_tool_call_script(
    name: str = "get_weather",
    fragments: tuple[str, ...] = ('{"ci', 'ty": "Pa', 'ris"}'),
    call_id: str = "call_abc123",
    **knobs: Unpack[Knobs],
) -> Script:
    first = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
    chunks = [chunk({"role": "assistant", "content": None, "tool_calls": [first]})]
    chunks += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": f}}]}) for f in fragments]
    chunks.append(chunk({}, finish="tool_calls"))
    chunks.append(usage_chunk())
    return script(chunks, **knobs)


def openai_midstream_error_script(message: str = "The server had an error", **knobs: Unpack[Knobs]) -> Script:
    chunks = [chunk({"role": "assistant", "content": "Hel"})]
    frames = [sse(c) for c in chunks] + [
        sse({"error": {"message": message, "type": "server_error", "code": None}})
    ]
    return Script(chunks=frames, **knobs)


def openai_error(status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> Script:
    return json_error(
        status, {"error": {"message": message, "type": kind, "param": None, "code": None}}, headers
    )
