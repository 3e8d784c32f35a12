"""Decoding and encoding of wire types, with API-shaped errors and unknown-field warnings."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
from msgspec import inspect as mi

from ..errors import InvalidArgument as InvalidArgument  # re-exported: where the codec's callers met it
from .base import OpenMember, dec_hook, enc_hook, split_error
from .content import Content, TextContent
from .interaction import CreateRequest
from .steps import Step, UserInputStep

T = TypeVar("T")

json_encoder = msgspec.json.Encoder(enc_hook=enc_hook)
msgpack_encoder = msgspec.msgpack.Encoder(enc_hook=enc_hook)
_any_json = msgspec.json.Decoder()

MAX_NAMES_PER_OBJECT = 5
MAX_WARNINGS = 20


def _join(prefix: str, msgspec_path: str) -> str:
    rest = msgspec_path.removeprefix("$")
    if not prefix:
        return rest.removeprefix(".")
    return prefix + rest


def convert(value: Any, tp: type[T], field: str = "") -> T:
    """`msgspec.convert` with open unions and an InvalidArgument naming the field path."""
    try:
        return msgspec.convert(value, tp, dec_hook=dec_hook)
    except msgspec.ValidationError as exc:
        message, path = split_error(str(exc))
        raise InvalidArgument(message, _join(field, path) or field or None) from None


def decode_json(body: bytes) -> Any:
    try:
        return _any_json.decode(body)
    except msgspec.DecodeError as exc:
        raise InvalidArgument(f"Malformed JSON body: {exc}") from None
    except RecursionError:
        raise InvalidArgument("The JSON body is nested too deeply") from None


def msgpack_decoder(tp: type[T]) -> msgspec.msgpack.Decoder[T]:
    return msgspec.msgpack.Decoder(tp, dec_hook=dec_hook)


# ---------------------------------------------------------------------------------------------------------
# Create requests


def decode_create(body: bytes, *, strict: bool = False) -> tuple[CreateRequest, list[Step], list[str]]:
    """Decode a create body into the request, this turn's input steps and the unknown-field warnings."""
    raw = decode_json(body)
    if not isinstance(raw, dict):
        raise InvalidArgument("The request body must be a JSON object")
    request = convert(raw, CreateRequest)
    unknown = find_unknown_fields(raw, CreateRequest)
    unknown += _unknown_in_input(raw.get("input"))
    if unknown and strict:
        path, name = unknown[0]
        raise InvalidArgument("Unknown field", f"{path}.{name}" if path else name)
    steps = normalize_input(request.input)
    return request, steps, warnings_of(unknown)


def normalize_input(raw: Any, field: str = "input") -> list[Step]:
    """Turn `input` (string, Content, Content[] or Step[], spec §3.1) into steps. An empty input is none."""
    if raw is None or raw == "":
        return []
    if isinstance(raw, str):
        return [UserInputStep(content=[TextContent(text=raw)])]
    if isinstance(raw, dict):
        if _kind(raw, field) == "content":
            return [UserInputStep(content=[convert(raw, Content, field)])]
        return [convert(raw, Step, field)]
    if not isinstance(raw, list):
        raise InvalidArgument("Expected a string, a content object or a list of steps or contents", field)
    if not raw:
        return []
    kinds = {_kind(item, f"{field}[{i}]") for i, item in enumerate(raw)}
    # a list is contents only if nothing in it is a step; unknown types go with the known ones around them
    if "step" not in kinds and "content" in kinds:
        return [UserInputStep(content=convert(raw, list[Content], field))]
    return convert(raw, list[Step], field)


def _kind(item: Any, field: str) -> str:
    """ "step", "content" or "unknown", by the item's `type`."""
    if not isinstance(item, dict):
        raise InvalidArgument("Expected an object", field)
    kind = item.get("type")
    if kind is None and "role" in item:
        raise InvalidArgument(
            'Role-based turns are the legacy schema; send steps such as {"type": "user_input", ...}',
            f"{field}.role",
        )
    if not isinstance(kind, str):
        raise InvalidArgument("Expected a string `type`", f"{field}.type")
    if kind in Step.known:
        return "step"
    return "content" if kind in Content.known else "unknown"


# ---------------------------------------------------------------------------------------------------------
# Unknown fields


_INFO: dict[Any, mi.Type] = {}


def _info(tp: Any) -> mi.Type:
    info = _INFO.get(tp)
    if info is None:
        info = _INFO[tp] = mi.type_info(tp)
    return info


def find_unknown_fields(raw: Any, tp: Any) -> list[tuple[str, str]]:
    """(object path, field name) of every field the wire types do not declare."""
    found: list[tuple[str, str]] = []
    _walk(raw, _info(tp), "", found)
    return found


_SEQUENCES = (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)


def _walk(value: Any, info: mi.Type, path: str, found: list[tuple[str, str]]) -> None:
    if isinstance(info, mi.StructType):
        if isinstance(value, dict):
            _walk_struct(value, info, path, found)
    elif isinstance(info, _SEQUENCES):
        if isinstance(value, list):
            for i, item in enumerate(value):
                _walk(item, info.item_type, f"{path}[{i}]", found)
    elif isinstance(info, mi.UnionType):
        member = _tagged_member(value, info) or next((m for m in info.types if _fits(value, m)), None)
        if member is not None:
            _walk(value, member, path, found)
    elif isinstance(info, mi.CustomType) and isinstance(value, dict):
        _walk_open_member(value, info, path, found)


def _walk_struct(value: dict[str, Any], info: mi.StructType, path: str, found: list[tuple[str, str]]) -> None:
    fields = {f.encode_name: f for f in info.fields}
    for key, item in value.items():
        field = fields.get(key)
        if field is not None:
            _walk(item, field.type, f"{path}.{key}" if path else key, found)
        elif key != info.tag_field:
            found.append((path, key))


def _walk_open_member(
    value: dict[str, Any], info: mi.CustomType, path: str, found: list[tuple[str, str]]
) -> None:
    """An open union's member, known by its `type` (an unknown type is kept as it is, unchecked)."""
    base = info.cls
    if isinstance(base, type) and issubclass(base, OpenMember) and hasattr(base, "known"):
        member_cls = base.known.get(value.get("type"))  # type: ignore[arg-type]
        if member_cls is not None:
            _walk(value, _info(member_cls), path, found)


def _tagged_member(value: Any, info: mi.UnionType) -> mi.Type | None:
    """The member of a msgspec tagged union (the dialects' messages by `role`, parts by `type`) that
    `value` names by its tag: the first struct would otherwise take every member's fields for unknown."""
    if not isinstance(value, dict):
        return None
    for member in info.types:
        if isinstance(member, mi.StructType) and member.tag_field is not None:
            if value.get(member.tag_field) == member.tag:
                return member
    return None


def _fits(value: Any, info: mi.Type) -> bool:
    if isinstance(value, dict):
        return isinstance(info, (mi.StructType, mi.CustomType))
    if isinstance(value, list):
        return isinstance(info, _SEQUENCES)
    return False


def _unknown_in_input(raw: Any) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    items = raw if isinstance(raw, list) else [raw] if isinstance(raw, dict) else []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        kind = str(item.get("type"))
        member = Step.known.get(kind) or Content.known.get(kind)
        if member is not None:
            _walk(item, _info(member), f"input[{i}]" if isinstance(raw, list) else "input", found)
    return found


def warnings_of(unknown: list[tuple[str, str]]) -> list[str]:
    """At most MAX_NAMES_PER_OBJECT names per object and MAX_WARNINGS entries overall; a cut list ends
    in a "+N more" entry."""
    if not unknown:
        return []
    by_object: dict[str, list[str]] = {}
    for path, name in unknown:
        by_object.setdefault(path, []).append(name)
    entries: list[str] = []
    for path, names in by_object.items():
        for name in names[:MAX_NAMES_PER_OBJECT]:
            entries.append(
                f"Unknown field ignored: {path}.{name}" if path else f"Unknown field ignored: {name}"
            )
        if len(names) > MAX_NAMES_PER_OBJECT:
            where = path or "the request"
            entries.append(f"+{len(names) - MAX_NAMES_PER_OBJECT} more unknown fields in {where}")
    if len(entries) > MAX_WARNINGS:
        rest = len(entries) - (MAX_WARNINGS - 1)
        entries = [*entries[: MAX_WARNINGS - 1], f"+{rest} more warnings"]
    return entries
