"""Google's `Schema` (the OpenAPI subset of `responseSchema` and of a function declaration's `parameters`)
as standard JSON Schema, which is what our create request carries and every backend takes.

    type: "OBJECT" (any case)        -> type: "object"; with nullable: true, ["object", "null"]
    properties, items, anyOf         -> the same, each converted
    required, enum, format, title,   -> the same
    description, minimum, maximum,
    minItems, maxItems, minLength,
    maxLength, pattern, default
    example                          -> examples: [example]
    propertyOrdering                 -> left out (an order of generation JSON Schema cannot say)
"""

from __future__ import annotations

from typing import Any

from ...errors import InvalidArgument

_KEPT = (
    "required",
    "enum",
    "format",
    "title",
    "description",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
    "pattern",
    "default",
)
_TYPES = {"string", "number", "integer", "boolean", "array", "object", "null"}


def json_schema(schema: Any, field: str) -> dict[str, Any]:
    if not isinstance(schema, dict):
        raise InvalidArgument("Expected a schema (an object)", field)
    out: dict[str, Any] = {key: schema[key] for key in _KEPT if key in schema}
    kind = schema.get("type")
    if isinstance(kind, str) and kind.upper() != "TYPE_UNSPECIFIED":
        if kind.lower() not in _TYPES:
            raise InvalidArgument(f"Unknown type {kind!r}", f"{field}.type")
        out["type"] = [kind.lower(), "null"] if schema.get("nullable") else kind.lower()
    properties = schema.get("properties")
    if isinstance(properties, dict):
        out["properties"] = {
            name: json_schema(value, f"{field}.properties.{name}") for name, value in properties.items()
        }
    if "items" in schema:
        out["items"] = json_schema(schema["items"], f"{field}.items")
    if isinstance(schema.get("anyOf"), list):
        out["anyOf"] = [json_schema(item, f"{field}.anyOf[{i}]") for i, item in enumerate(schema["anyOf"])]
    if "example" in schema:
        out["examples"] = [schema["example"]]
    return out
