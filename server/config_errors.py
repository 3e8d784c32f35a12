"""Configuration mistakes in words: msgspec's validation and TOML errors as `<field path>: <problem>`.

msgspec says `Expected `int` >= 1 - at `$.http.port``; an operator reads `http.port: expected an integer
from 1 to 65535, got 0`. The types' own metadata (ranges, literals, descriptions) supplies the words.
"""

from __future__ import annotations

import datetime
import json
import re
from typing import Any, get_args

from msgspec import inspect as mi


class ConfigError(Exception):
    """A configuration mistake; `str()` is one line: where (file or variable), the field, the problem."""


#: msgspec sorts a Literal's values; messages list them as declared (the default first)
_DECLARED_ORDER: dict[frozenset[Any], tuple[Any, ...]] = {}


def declare_literals(*literals: Any) -> None:
    for literal in literals:
        _DECLARED_ORDER[frozenset(get_args(literal))] = get_args(literal)


_LINE_COLUMN = re.compile(r"^(?P<text>.*?)\s*\(at line (?P<line>\d+), column (?P<column>\d+)\)$")


def syntax_problem(message: str) -> str:
    found = _LINE_COLUMN.match(message)
    if found is None:
        return f"not valid TOML: {_lower_first(message)}"
    where = f"line {found['line']}, column {found['column']}"
    return f"TOML syntax error at {where}: {_lower_first(found['text'])}"


_AT = re.compile(r"^(?P<text>.*?)(?: - at `(?P<path>\$[^`]*)`)?$")
_SEGMENT = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<name>[^`]*)`$")
_MISSING = re.compile(r"^Object missing required field `(?P<name>[^`]*)`$")
#: fields whose bad values are not repeated: a key pasted in place of a variable name is a secret
_SECRET_FIELDS = frozenset({"api_key_env"})


def validation_problem(message: str, raw: Any, tp: type[Any]) -> str:
    """`Expected `int` >= 1 - at `$.http.port`` -> `http.port: expected an integer >= 1, got 0`."""
    found = _AT.match(message)
    assert found is not None  # the pattern matches any text
    text = found["text"]
    segments: list[str | int] = [
        name if name else (int(index) if index.isdigit() else "[...]")
        for name, index in _SEGMENT.findall(found["path"] or "")
    ]
    info: mi.Type | None = mi.type_info(tp)
    for segment in segments:
        info = field_type(info, segment) if info is not None else None
    unknown, missing = _UNKNOWN.match(text), _MISSING.match(text)
    if unknown is not None:
        where = _path_text([*segments, unknown["name"]])
        known = _field_names(info)
        kind = "section" if not segments else "field"
        return f"{where}: unknown {kind}" + (f" (known: {', '.join(known)})" if known else "")
    if missing is not None:
        return f"{_path_text([*segments, missing['name']])}: missing (it is required)"
    where = _path_text(segments) or "(top level)"
    if info is None:
        return f"{where}: {_lower_first(text)}"
    problem = f"{where}: expected {describe(info)}"
    value = _value_at(raw, segments)
    if value is not _ABSENT and not (segments and segments[-1] in _SECRET_FIELDS):
        problem += f", got {_render(value)}"
    return problem


def _path_text(segments: list[str | int]) -> str:
    text = ""
    for segment in segments:
        if isinstance(segment, int):
            text += f"[{segment}]"
        elif segment == "[...]":
            text += segment
        else:
            text += f".{segment}" if text else segment
    return text


def unwrap(info: mi.Type) -> mi.Type:
    """The type behind a description, or behind `X | None` (TOML has no null, so None is never meant)."""
    if isinstance(info, mi.Metadata):
        return unwrap(info.type)
    if isinstance(info, mi.UnionType):
        members = [t for t in info.types if not isinstance(t, mi.NoneType)]
        if len(members) == 1:
            return unwrap(members[0])
    return info


def field_type(info: mi.Type, segment: str | int) -> mi.Type | None:
    info = unwrap(info)
    if isinstance(info, mi.StructType) and isinstance(segment, str):
        return next((f.type for f in info.fields if f.encode_name == segment), None)
    if isinstance(info, mi.ListType) and isinstance(segment, int):
        return info.item_type
    if isinstance(info, mi.DictType):
        return info.value_type
    return None


def _field_names(info: mi.Type | None) -> list[str]:
    info = unwrap(info) if info is not None else None
    return [f.encode_name for f in info.fields] if isinstance(info, mi.StructType) else []


def describe(info: mi.Type) -> str:
    """What a field takes, in the words of a TOML file: 'an integer from 1 to 65535', 'one of "a", "b"'."""
    if isinstance(info, mi.UnionType):
        return " or ".join(describe(t) for t in info.types if not isinstance(t, mi.NoneType))
    if isinstance(info, mi.Metadata):
        description = (info.extra_json_schema or {}).get("description")
        return str(description) if description else describe(info.type)
    if isinstance(info, mi.LiteralType):
        values = _DECLARED_ORDER.get(frozenset(info.values), info.values)
        return "one of " + ", ".join(json.dumps(v) for v in values)
    if isinstance(info, mi.BoolType):
        return "true or false"
    if isinstance(info, mi.IntType):
        return "an integer" + _bounds(info.ge, info.gt, info.le, info.lt)
    if isinstance(info, mi.FloatType):
        return "a number" + _bounds(info.ge, info.gt, info.le, info.lt)
    if isinstance(info, mi.StrType):
        return "a non-empty string" if info.min_length else "a string"
    if isinstance(info, mi.ListType):
        item = unwrap(info.item_type)
        return "an array of tables" if isinstance(item, mi.StructType) else "an array"
    if isinstance(info, (mi.StructType, mi.DictType)):
        return "a table"
    return "another value"


def _bounds(ge: float | None, gt: float | None, le: float | None, lt: float | None) -> str:
    if ge is not None and le is not None:
        return f" from {_number(ge)} to {_number(le)}"
    limits = ((">=", ge), (">", gt), ("<=", le), ("<", lt))
    parts = [f"{op} {_number(bound)}" for op, bound in limits if bound is not None]
    return " " + " and ".join(parts) if parts else ""


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


_ABSENT = object()


def _value_at(raw: Any, segments: list[str | int]) -> Any:
    value = raw
    for segment in segments:
        if isinstance(segment, str) and isinstance(value, dict) and segment in value:
            value = value[segment]
        elif isinstance(segment, int) and isinstance(value, list) and segment < len(value):
            value = value[segment]
        else:
            return _ABSENT
    return value


def _render(value: Any) -> str:
    """A value as it was written in the file."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return repr(value)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]
