"""Scripts for a fake Gemini `streamGenerateContent?alt=sse`: `data:` events only, no `[DONE]`."""

from __future__ import annotations

from typing import Any, Unpack

from .http import Knobs, Script, json_error, sse

MODEL_VERSION = "gemini-fake-001"


def usage(
    prompt: int = 5, output: int = 3, thoughts: int | None = None, cached: int | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"promptTokenCount": prompt, "candidatesTokenCount": output}
    if thoughts is not None:
        meta["thoughtsTokenCount"] = thoughts
    if cached is not None:
        meta["cachedContentTokenCount"] = cached
    meta["totalTokenCount"] = prompt + output + (thoughts or 0)
    meta["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": prompt}]
    return meta


def chunk(
    parts: list[dict[str, Any]], finish: str | None = None, meta: dict[str, Any] | None = None
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    body: dict[str, Any] = {"candidates": [candidate], "modelVersion": MODEL_VERSION, "responseId": "resp-1"}
    if meta is not None:
        body["usageMetadata"] = meta
    return body


def script(chunks: list[dict[str, Any]], **knobs: Unpack[Knobs]) -> Script:
    return Script(chunks=[sse(c) for c in chunks], **knobs)


def text_chunks(text: str, finish: str = "STOP", pieces: int = 3) -> list[dict[str, Any]]:
    size = max(1, -(-len(text) // pieces))
    parts = [text[i : i + size] for i in range(0, len(text), size)] or [""]
    out = [chunk([{"text": p}], meta=usage(output=i + 1)) for i, p in enumerate(parts)]
    out[-1]["candidates"][0]["finishReason"] = finish
    return out


def gemini_text_script(text: str = "Hello world", finish: str = "STOP", **knobs: Unpack[Knobs]) -> Script:
    return script(text_chunks(text, finish), **knobs)


def gemini_thought_script(
    thought: str = "Let me think.",
    text: str = "42",
    signature: str = "c2lnLWdlbWluaQ==",
    **knobs: Unpack[Knobs],
) -> Script:
    return script(
        [
            chunk([{"text": thought, "thought": True}]),
            chunk([{"text": text, "thoughtSignature": signature}]),
            chunk([{"text": ""}], finish="STOP", meta=usage(output=1, thoughts=7)),
        ],
        **knobs,
    )


def gemini_function_call_script(
    name: str = "get_weather",
    args: dict[str, Any] | None = None,
    signature: str | None = "Zm4tc2ln",
    **knobs: Unpack[Knobs],
) -> Script:
    part: dict[str, Any] = {
        "functionCall": {"name": name, "args": args if args is not None else {"city": "Paris"}}
    }
    if signature:
        part["thoughtSignature"] = signature
    return script([chunk([part], finish="STOP", meta=usage())], **knobs)


def gemini_error(
    status: int,
    message: str,
    google_status: str,
    headers: dict[str, str] | None = None,
    retry_delay: str | None = None,
) -> Script:
    """Google's error envelope (every Google API's, the Interactions API's too); `retry_delay` ("37s") adds
    the google.rpc.RetryInfo detail that says how long to wait."""
    error: dict[str, Any] = {"code": status, "message": message, "status": google_status}
    if retry_delay is not None:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay}]
    return json_error(status, {"error": error}, headers)
