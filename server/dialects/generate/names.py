"""Both spellings of Google's field names: a body's `system_instruction` read as `systemInstruction`.

Google's API parses JSON with protobuf's mapping, which takes a field's camelCase JSON name and its
snake_case proto name alike; the SDKs send camelCase, and Google's own curl examples write
`system_instruction` and `inline_data`. The wire types (wire.py) read camelCase, so a body's snake_case
names of declared fields are renamed first, only where the types declare objects of ours: a function's
arguments, a response or a schema (free JSON) keep their keys as sent.
"""

from __future__ import annotations

from typing import Any

import msgspec.inspect as mi

_INFO: dict[Any, mi.Type] = {}
_SEQUENCES = (mi.ListType, mi.VarTupleType)


def camel_keys(raw: Any, tp: Any) -> Any:
    """`raw` with the snake_case names of `tp`'s fields (at any depth) in their camelCase spelling."""
    info = _INFO.get(tp)
    if info is None:
        info = _INFO[tp] = mi.type_info(tp)
    return _walk(raw, info)


def _walk(value: Any, info: mi.Type) -> Any:
    if isinstance(info, mi.StructType) and isinstance(value, dict):
        fields = {f.name: f for f in info.fields} | {f.encode_name: f for f in info.fields}
        out = {}
        for key, item in value.items():
            field = fields.get(key)
            if field is None:
                out[key] = item
            else:
                out[field.encode_name] = _walk(item, field.type)
        return out
    if isinstance(info, _SEQUENCES) and isinstance(value, list):
        return [_walk(item, info.item_type) for item in value]
    if isinstance(info, mi.UnionType):
        member = next((m for m in info.types if isinstance(m, mi.StructType | mi.ListType)), None)
        if member is not None:
            return _walk(value, member)
    return value
