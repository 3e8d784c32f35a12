"""What the parts of the OpenAPI document share."""

from __future__ import annotations

from typing import Any

from ...protocol.base import OpenMember
from ...protocol.content import Content
from ...protocol.deltas import Delta
from ...protocol.steps import Step
from ...protocol.tools import Tool

Json = dict[str, Any]

#: each is one named component (built by schemas.open_union), not a copy inlined at every use
OPEN_UNIONS: tuple[type[OpenMember], ...] = (Step, Content, Delta, Tool)


def ref(name: str, kind: str = "schemas") -> Json:
    return {"$ref": f"#/components/{kind}/{name}"}


def schema_hook(tp: type[Any]) -> Json:
    if isinstance(tp, type) and issubclass(tp, OpenMember):
        return ref(tp.__name__)
    raise NotImplementedError
