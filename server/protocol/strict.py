"""A Struct tree's strict twin: the same types, at every depth, with `forbid_unknown_fields`.

A body with no field the types do not declare (most bodies: what the SDKs send) decodes with the twin in
one pass from its bytes, and needs neither the generic decode to Python objects nor the walk that looks
for unknown fields (codec.find_unknown_fields). A body the twin refuses, for an unknown field or any other
reason, is read again the full way, which finds its warnings or its error as it always did: the twin only
ever answers bodies the full way would take as they are, with no warning.

Each twin is a subclass of its Struct, so what it decodes is an instance of the declared types.
"""

from __future__ import annotations

import functools
import operator
import types
import typing
from typing import Any, TypeVar, cast

import msgspec

from .base import dec_hook

S = TypeVar("S", bound=msgspec.Struct)

_TWINS: dict[type[Any], type[Any]] = {}
_DECODERS: dict[type[Any], msgspec.json.Decoder[Any]] = {}


def decoder(tp: type[S]) -> msgspec.json.Decoder[S]:
    """A JSON decoder of `tp`'s strict twin (made once per type)."""
    made = _DECODERS.get(tp)
    if made is None:
        made = _DECODERS[tp] = msgspec.json.Decoder(twin(tp), dec_hook=dec_hook)
    return cast(msgspec.json.Decoder[S], made)


def twin(tp: type[S]) -> type[S]:
    """`tp`'s subclass that refuses unknown fields, its fields' Struct types their twins too."""
    made = _TWINS.get(tp)
    if made is None:
        fields = [_field(info) for info in msgspec.structs.fields(tp)]
        config = tp.__struct_config__
        # a tagged member keeps its tag; the other options (rename, omit_defaults, gc) are inherited
        tag = config.tag if config.tag_field is not None else None
        made = _TWINS[tp] = msgspec.defstruct(
            f"Strict{tp.__name__}",
            fields,
            bases=(tp,),
            module=tp.__module__,
            kw_only=True,
            tag=tag,
            forbid_unknown_fields=True,
        )
    return cast(type[S], made)


def _field(info: msgspec.structs.FieldInfo) -> tuple[str, Any, Any]:
    if info.default is not msgspec.NODEFAULT:
        default: Any = info.default
    elif info.default_factory is not msgspec.NODEFAULT:
        default = msgspec.field(default_factory=info.default_factory)
    else:
        default = msgspec.field()
    return info.name, _twin_type(info.type), default


def _twin_type(tp: Any) -> Any:
    """An annotation with each Struct in it (in a list, a dict's values, a union) as its twin."""
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return twin(tp)
    args = typing.get_args(tp)
    if not args:
        return tp
    twins = tuple(_twin_type(arg) for arg in args)
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return functools.reduce(operator.or_, twins)
    return origin[twins]
