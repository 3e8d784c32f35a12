"""A create body's `tools` and `tool_choice` as ours, pure.

    {"type": "function", name, description, parameters, strict}  -> a function tool. `strict` is accepted
        (OpenAI's SDKs and the Agents SDK send `true` by default) and not enforced: the schema goes to the
        model, whose answer is not checked against it; the record keeps a warning saying so.
    {"type": "mcp", server_label, server_url, headers, authorization, allowed_tools,
     require_approval: "never"}                                  -> an mcp_server tool, run by this server
        (server/tools/) as Google's dialect runs it. Approvals are not served: `require_approval` must be
        "never" (OpenAI's default is to ask, so it must be sent); `connector_id` (OpenAI's connectors) and
        `allowed_tools.read_only` are 400s.
    any other type                                                -> a 400 naming tools[i].type

tool_choice: "auto" / "required" / "none" -> auto / any / none; {"type": "function", "name"} -> that one
function (allowed_tools mode any); {"type": "allowed_tools", "mode", "tools"} -> allowed_tools.
"""

from __future__ import annotations

from typing import Any, Final

from ...errors import InvalidArgument
from ...protocol.tools import FunctionTool, McpServerTool, Tool
from .settings import CHOICES

#: the fields of OpenAI's mcp tool that this server does not serve (a 400 unless null)
_MCP_NOT_SERVED: Final = ("connector_id", "server_description", "defer_loading", "allowed_callers")


def decode_tools(raw: Any) -> tuple[list[Tool], list[str]]:
    """The tools and the warnings of what they ask that is not enforced."""
    if raw is None:
        return [], []
    if not isinstance(raw, list):
        raise InvalidArgument("Expected a list of tools", "tools")
    tools: list[Tool] = []
    warnings: list[str] = []
    for index, tool in enumerate(raw):
        field = f"tools[{index}]"
        if not isinstance(tool, dict):
            raise InvalidArgument("Expected a tool (an object)", field)
        kind = tool.get("type")
        if kind == "function":
            tools.append(_function(tool, field))
            if tool.get("strict"):
                warnings.append(f"{field}.strict: the arguments are not checked against the schema")
        elif kind == "mcp":
            tools.append(_mcp(tool, field))
        else:
            raise InvalidArgument(
                f"Tools of type {kind!r} are not served (function and mcp are)", f"{field}.type"
            )
    return tools, warnings


def _function(tool: dict[str, Any], field: str) -> FunctionTool:
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidArgument("Expected a string `name`", f"{field}.name")
    description = tool.get("description")
    if description is not None and not isinstance(description, str):
        raise InvalidArgument("Expected a string", f"{field}.description")
    parameters = tool.get("parameters")
    if parameters is not None and not isinstance(parameters, dict):
        raise InvalidArgument("Expected a JSON schema (an object)", f"{field}.parameters")
    if tool.get("strict") not in (None, True, False):
        raise InvalidArgument("Expected true or false", f"{field}.strict")
    return FunctionTool(name=name, description=description, parameters=parameters)


def _mcp(tool: dict[str, Any], field: str) -> McpServerTool:
    for key in _MCP_NOT_SERVED:
        if tool.get(key) is not None:
            raise InvalidArgument(f"`{key}` is not served: give the server's `server_url`", f"{field}.{key}")
    if tool.get("require_approval") != "never":
        raise InvalidArgument(
            'Approvals are not served: send `require_approval: "never"` (this server then calls the tools '
            "itself, as the model asks)",
            f"{field}.require_approval",
        )
    label, url = tool.get("server_label"), tool.get("server_url")
    if not isinstance(label, str) or not label:
        raise InvalidArgument("Expected a string `server_label`", f"{field}.server_label")
    if not isinstance(url, str) or not url:
        raise InvalidArgument("Expected a string `server_url`", f"{field}.server_url")
    return McpServerTool(
        name=label,
        url=url,
        headers=_headers(tool, field),
        allowed_tools=_allowed(tool.get("allowed_tools"), field),
    )


def _headers(tool: dict[str, Any], field: str) -> dict[str, str] | None:
    headers = tool.get("headers")
    if headers is not None and (
        not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values())
    ):
        raise InvalidArgument("Expected an object of strings", f"{field}.headers")
    shown = dict(headers or {})
    authorization = tool.get("authorization")
    if authorization is not None:
        if not isinstance(authorization, str):
            raise InvalidArgument("Expected a string", f"{field}.authorization")
        # OpenAI sends it as the server's bearer token
        shown["Authorization"] = f"Bearer {authorization}"
    return shown or None


def _allowed(raw: Any, field: str) -> list[dict[str, Any]] | None:
    if raw is None:
        return None
    where = f"{field}.allowed_tools"
    if isinstance(raw, dict):
        if raw.get("read_only") is not None:
            raise InvalidArgument("`read_only` is not served: name the tools", f"{where}.read_only")
        raw = raw.get("tool_names")
        where = f"{where}.tool_names"
    if not isinstance(raw, list) or not all(isinstance(name, str) for name in raw):
        raise InvalidArgument("Expected a list of tool names", where)
    return [{"mode": "auto", "tools": raw}]


def decode_tool_choice(raw: Any) -> str | dict[str, Any] | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        if raw not in CHOICES:
            raise InvalidArgument("Expected auto, required or none", "tool_choice")
        return CHOICES[raw]
    if not isinstance(raw, dict):
        raise InvalidArgument("Expected a string or an object", "tool_choice")
    kind = raw.get("type")
    if kind == "function":
        name = raw.get("name")
        if not isinstance(name, str):
            raise InvalidArgument("Expected a string `name`", "tool_choice.name")
        return {"allowed_tools": {"mode": "any", "tools": [name]}}
    if kind == "allowed_tools":
        mode = raw.get("mode")
        if mode not in ("auto", "required"):
            raise InvalidArgument("Expected auto or required", "tool_choice.mode")
        return {"allowed_tools": {"mode": CHOICES[mode], "tools": _choice_names(raw.get("tools"))}}
    raise InvalidArgument(f"A tool choice of type {kind!r} is not served", "tool_choice.type")


def _choice_names(raw: Any) -> list[str]:
    if not isinstance(raw, list):
        raise InvalidArgument("Expected a list of tools", "tool_choice.tools")
    names: list[str] = []
    for index, tool in enumerate(raw):
        if (
            not isinstance(tool, dict)
            or tool.get("type") != "function"
            or not isinstance(tool.get("name"), str)
        ):
            raise InvalidArgument("Expected a function tool with its `name`", f"tool_choice.tools[{index}]")
        names.append(tool["name"])
    return names
