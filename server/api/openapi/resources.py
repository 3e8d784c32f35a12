"""What the documents of this server's resources (webhooks, agents, models) share: their replies and query
parameters, and each resource's operations repeated on Google's and Vertex's prefixes."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from .common import Json
from .parameters import PARAMETERS

#: (path prefix, its parameters, the suffix of its operations' ids): Google's form, then Vertex's
PREFIXES = (
    ("/{version}", ["Version"], ""),
    ("/{version}/projects/{project}/locations/{location}", ["Version", "Project", "Location"], "Vertex"),
)


def reply(description: str, schema: Json) -> Json:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def query(name: str, description: str, kind: str = "string") -> Json:
    schema: Json = {"type": kind, "minimum": 0} if kind == "integer" else {"type": kind}
    return {"name": name, "in": "query", "description": description, "schema": schema}


def prefixed(
    operations: Callable[[], dict[str, Json]], tags: tuple[str, str]
) -> Iterator[tuple[str, list[Json], dict[str, Json]]]:
    """Per prefix: the prefix, its path parameters, and the operations with their ids and tag for it
    (`tags`: Google's form's, Vertex's)."""
    for prefix, names, suffix in PREFIXES:
        tag = tags[1] if suffix else tags[0]
        ops = {
            key: {**op, "operationId": op["operationId"] + suffix, "tags": [tag]}
            for key, op in operations().items()
        }
        yield prefix, [PARAMETERS[name] for name in names], ops
