"""The settings a Response echoes, from the interaction's config: what decode.py made of the request's
(tool choice, tools, text format, reasoning, metadata), read back in OpenAI's terms. Each mapping is in one
place, read both ways: decode.py turns OpenAI's value into ours with the same tables."""

from __future__ import annotations

from typing import Any, Final

from ...protocol.interaction import Interaction
from ...protocol.tools import FunctionTool, GenerationConfig, McpServerTool, Tool
from ...protocol.views import HIDDEN_HEADER
from . import wire

#: OpenAI's tool_choice mode -> ours (generation_config.tool_choice), and back
CHOICES: Final = {"auto": "auto", "required": "any", "none": "none"}
_CHOICES_BACK: Final = {ours: theirs for theirs, ours in CHOICES.items()} | {"validated": "auto"}

#: OpenAI's reasoning.effort -> our thinking_level (the same words; `none` asks for no thinking, which our
#: levels cannot say: a 400, decode.py)
EFFORTS: Final = ("minimal", "low", "medium", "high", "xhigh")
#: OpenAI's reasoning.summary -> our thinking_summaries
SUMMARIES: Final = {"auto": "auto"}

#: the name a json_schema format is echoed with (the request's is not kept: it never reaches a model)
SCHEMA_NAME: Final = "response"


def echoed_tool_choice(gen: GenerationConfig | None) -> str | dict[str, Any]:
    choice = gen.tool_choice if gen else None
    if isinstance(choice, str):
        return _CHOICES_BACK.get(choice, "auto")
    if isinstance(choice, dict) and isinstance(allowed := choice.get("allowed_tools"), dict):
        names = [name for name in allowed.get("tools") or [] if isinstance(name, str)]
        mode = _CHOICES_BACK.get(str(allowed.get("mode") or "auto"), "auto")
        if len(names) == 1 and mode == "required":
            return {"type": "function", "name": names[0]}
        return {
            "type": "allowed_tools",
            "mode": mode,
            "tools": [{"type": "function", "name": name} for name in names],
        }
    return "auto"


def echoed_tools(tools: list[Tool] | None) -> list[dict[str, Any]]:
    shown: list[dict[str, Any]] = []
    for tool in tools or ():
        if isinstance(tool, FunctionTool):
            shown.append(
                {
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                    # schema adherence is the upstream model's: this server does not enforce it
                    "strict": False,
                }
            )
        elif isinstance(tool, McpServerTool):
            shown.append(_mcp_tool(tool))
    return shown


def _mcp_tool(tool: McpServerTool) -> dict[str, Any]:
    names = [name for rule in tool.allowed_tools or () for name in rule.get("tools") or ()]
    return {
        "type": "mcp",
        "server_label": tool.name,
        "server_url": tool.url,
        # the header values are credentials: shown hidden, as Google's dialect shows them
        "headers": dict.fromkeys(tool.headers, HIDDEN_HEADER) if tool.headers else None,
        "allowed_tools": names or None,
        "require_approval": "never",
    }


def echoed_format(interaction: Interaction) -> dict[str, Any]:
    """`text.format`: json_schema for a response format with a schema, json_object for JSON without one."""
    fmt = interaction.response_format
    if isinstance(fmt, dict) and fmt.get("type") == "text" and isinstance(fmt.get("schema"), dict):
        return _schema_format(fmt["schema"])
    if isinstance(fmt, dict) and fmt.get("type") == "text" and fmt.get("mime_type") == "application/json":
        return {"type": "json_object"}
    if isinstance(fmt, dict) and fmt.get("type") not in (None, "text", "image", "audio", "video"):
        # Google's legacy form: the schema itself
        return {
            "type": "json_schema",
            "name": SCHEMA_NAME,
            "description": None,
            "schema": fmt,
            "strict": False,
        }
    if interaction.response_mime_type == "application/json":
        return {"type": "json_object"}
    return {"type": "text"}


def echoed_reasoning(gen: GenerationConfig | None) -> wire.ReasoningConfig | None:
    if gen is None or (gen.thinking_level is None and gen.thinking_summaries is None):
        return None
    summary = gen.thinking_summaries if gen.thinking_summaries in SUMMARIES.values() else None
    return wire.ReasoningConfig(effort=gen.thinking_level, summary=summary)


def _schema_format(schema: dict[str, Any]) -> dict[str, Any]:
    # strict false: the schema is the upstream model's to follow; this server does not check the answer
    return {
        "type": "json_schema",
        "name": SCHEMA_NAME,
        "description": None,
        "schema": schema,
        "strict": False,
    }
