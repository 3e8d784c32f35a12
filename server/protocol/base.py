"""Shared Struct configuration and the "open union" machinery.

The API's step, content, delta and tool unions are discriminated by `type`, and unknown members must be
kept exactly as they came. msgspec's tagged unions reject unknown tags, so each union is declared as a
marker base class: msgspec hands values of that type to `dec_hook`, which picks the known Struct by tag or
wraps the raw object in an `Unknown*` holder that encodes back verbatim.
"""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec


class Wire(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    """A plain wire object: keyword-only, `None`/default fields left out when encoded.

    Wire objects are data: they never form reference cycles, so the garbage collector need not track
    them (a server holds many of them, and full collections would scan them all).
    """


class Tagged(Wire, tag_field="type"):
    """A member of an open union; its tag is its `type`."""


class OpenMember:
    """Marker base of an open union. Subclasses set `union_name` and the registry fills `known`."""

    __slots__ = ()
    union_name: ClassVar[str] = "object"
    known: ClassVar[dict[str, type[Any]]]
    unknown_class: ClassVar[type[Any]]


class UnknownMember:
    """A union member whose `type` this server does not know: kept and returned as received."""

    __slots__ = ("raw",)

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw

    @property
    def type(self) -> str:
        return str(self.raw.get("type", ""))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UnknownMember) and other.raw == self.raw

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.raw!r})"


def register(base: type[OpenMember], unknown: type[UnknownMember], *members: type[Tagged]) -> None:
    """Declare the known members of an open union."""
    known: dict[str, type[Any]] = {}
    for member in members:
        tag = member.__struct_config__.tag
        assert isinstance(tag, str), member
        known[tag] = member
    base.known = known
    base.unknown_class = unknown


_UNION_BASES: dict[type[Any], type[OpenMember]] = {}


def open_union(base: type[OpenMember]) -> type[OpenMember]:
    """Class decorator: make `base` decodable through `dec_hook`."""
    _UNION_BASES[base] = base
    return base


SUBPATH_MARK = "\x00"


def dec_hook(tp: type[Any], obj: Any) -> Any:
    base = _UNION_BASES.get(tp)
    if base is None:
        raise NotImplementedError(f"cannot decode {tp!r}")
    if not isinstance(obj, dict):
        raise ValueError(f"Expected a {base.union_name} object")
    tag = obj.get("type")
    if not isinstance(tag, str):
        raise ValueError(f"Expected a {base.union_name} object with a string `type`{SUBPATH_MARK}$.type")
    member = base.known.get(tag)
    if member is None:
        return base.unknown_class(obj)
    try:
        return msgspec.convert(obj, member, dec_hook=dec_hook)
    except msgspec.ValidationError as exc:
        message, path = split_error(str(exc))
        raise ValueError(f"{message}{SUBPATH_MARK}{path}") from None


def enc_hook(obj: Any) -> Any:
    if isinstance(obj, UnknownMember):
        return obj.raw
    raise NotImplementedError(f"cannot encode {type(obj)!r}")


def split_error(text: str) -> tuple[str, str]:
    """Turn a msgspec error (possibly nested through `dec_hook`) into (message, `$.a[0].b` path)."""
    path = ""
    while True:
        head, sep, tail = text.rpartition(" - at `")
        if not sep:
            break
        path = tail.rstrip("`").removeprefix("$") + path
        text = head
    message, _, inner = text.partition(SUBPATH_MARK)
    while inner:
        # an inner error carries its own path after the mark; it sits below the outer one
        inner_path, _, rest = inner.partition(SUBPATH_MARK)
        path = path + inner_path.removeprefix("$")
        inner = rest
    return message, "$" + path
