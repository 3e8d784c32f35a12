"""The fields a create body's objects may hold, to find the unknown ones: a warning each (kept on the record),
or with `http.strict_unknown_fields` a 400 naming the first, as Google's dialect does (protocol/codec.py).
Item fields OpenAI's clients send back from a Response (an item's `id`, `status`) are known: ignored."""

from __future__ import annotations

from typing import Any, Final

_ITEM: Final = frozenset({"type", "id", "status"})
#: by the item's `type`
_ITEMS: Final[dict[str, frozenset[str]]] = {
    "message": _ITEM | {"role", "content", "phase"},
    "function_call": _ITEM | {"call_id", "name", "arguments", "namespace", "caller"},
    "function_call_output": _ITEM | {"call_id", "output", "name", "namespace", "caller"},
    "reasoning": _ITEM | {"summary", "content", "encrypted_content"},
    "mcp_call": _ITEM | {"server_label", "name", "arguments", "output", "error", "approval_request_id"},
}
#: by the part's `type`
_PARTS: Final[dict[str, frozenset[str]]] = {
    "input_text": frozenset({"type", "text", "prompt_cache_breakpoint"}),
    "output_text": frozenset({"type", "text", "annotations", "logprobs"}),
    "refusal": frozenset({"type", "refusal"}),
    "input_image": frozenset({"type", "image_url", "detail", "file_id", "prompt_cache_breakpoint"}),
    "input_file": frozenset(
        {"type", "file_data", "file_url", "file_id", "filename", "detail", "prompt_cache_breakpoint"}
    ),
    "input_audio": frozenset({"type", "input_audio"}),
}
_TOOLS: Final[dict[str, frozenset[str]]] = {
    "function": frozenset({"type", "name", "description", "parameters", "strict"}),
    "mcp": frozenset(
        {
            "type",
            "server_label",
            "server_url",
            "headers",
            "authorization",
            "allowed_tools",
            "require_approval",
            "connector_id",
            "server_description",
            "defer_loading",
            "allowed_callers",
        }
    ),
}
_REASONING: Final = frozenset({"effort", "summary", "generate_summary"})
_TEXT: Final = frozenset({"format", "verbosity"})
_FORMATS: Final[dict[str, frozenset[str]]] = {
    "text": frozenset({"type"}),
    "json_object": frozenset({"type"}),
    "json_schema": frozenset({"type", "name", "schema", "strict", "description"}),
}


def unknown_fields(raw: dict[str, Any]) -> list[tuple[str, str]]:
    """(object path, field name) of each unknown field below the top level."""
    found: list[tuple[str, str]] = []
    _check(raw.get("reasoning"), _REASONING, "reasoning", found)
    text = raw.get("text")
    _check(text, _TEXT, "text", found)
    if isinstance(text, dict):
        _typed(text.get("format"), _FORMATS, "text.format", found)
    tools = raw.get("tools")
    for index, tool in enumerate(tools if isinstance(tools, list) else ()):
        _typed(tool, _TOOLS, f"tools[{index}]", found)
    items = raw.get("input")
    for index, item in enumerate(items if isinstance(items, list) else ()):
        _item(item, f"input[{index}]", found)
    return found


def _item(item: Any, path: str, found: list[tuple[str, str]]) -> None:
    if not isinstance(item, dict):
        return
    kind = item.get("type", "message" if "role" in item else None)
    _check(item, _ITEMS.get(str(kind)), path, found)
    content = item.get("content") if kind == "message" else item.get("output")
    where = f"{path}.content" if kind == "message" else f"{path}.output"
    for index, part in enumerate(content if isinstance(content, list) else ()):
        _typed(part, _PARTS, f"{where}[{index}]", found)


def _typed(value: Any, known: dict[str, frozenset[str]], path: str, found: list[tuple[str, str]]) -> None:
    if isinstance(value, dict):
        _check(value, known.get(str(value.get("type"))), path, found)


def _check(value: Any, known: frozenset[str] | None, path: str, found: list[tuple[str, str]]) -> None:
    """An object of a type this server does not serve is refused where it is read, not checked here."""
    if isinstance(value, dict) and known is not None:
        found.extend((path, key) for key in value if key not in known)
