"""What every resource's and dialect's handlers share: the paths' bases, the app's state behind a checked
version segment, a JSON response, query parameters read under both spellings, a value cut for a message."""

from __future__ import annotations

import re
from typing import Any

from litestar import Request, Response

from ..errors import InvalidArgument
from ..protocol.codec import json_encoder
from .errors import ApiError
from .state import AppState

_VERSION = re.compile(r"v\d+((alpha|beta)\d*)?")

#: every Google resource is served on any version segment and in the Vertex form
BASES = ("/{version:str}", "/{version:str}/projects/{project:str}/locations/{location:str}")


def state_of(request: Request[Any, Any, Any]) -> AppState:
    """The app's state for a handler under BASES: a 404 for a version segment that is none."""
    if not _VERSION.fullmatch(request.path_params.get("version", "")):
        raise ApiError(404, f"No route for {request.method} {request.url.path}")
    return app_state(request)


def app_state(request: Request[Any, Any, Any]) -> AppState:
    """The app's state for any handler, its path checked for encoded slashes."""
    state: AppState = request.app.state.ix
    _no_encoded_slash(request)
    return state


def _no_encoded_slash(request: Request[Any, Any, Any]) -> None:
    """The server decodes the path before routing, so `<id>%2Fcancel` would reach cancel and `<id>%2F`
    the item: as sent, such a path names no route (an id never holds a slash)."""
    raw = request.scope.get("raw_path")
    if raw and b"%2" in raw and b"%2f" in raw.partition(b"?")[0].lower():
        shown = raw.partition(b"?")[0].decode("latin-1")
        raise ApiError(404, f"No route for {request.method} {shorten(shown)}: %2F is not a path separator")


def shorten(text: str, limit: int = 64) -> str:
    """A value from the request, cut for an error message (a path can be kilobytes long)."""
    return text if len(text) <= limit else text[:limit] + "..."


def json_response(value: Any, status_code: int = 200) -> Response[bytes]:
    return Response(
        content=json_encoder.encode(value), status_code=status_code, media_type="application/json"
    )


def empty() -> Response[bytes]:
    """`{}`: what a delete answers."""
    return Response(content=b"{}", status_code=200, media_type="application/json")


def queries(request: Request[Any, Any, Any], name: str, alias: str | None = None) -> list[str]:
    """The values sent under either spelling, `name` first."""
    params = request.query_params
    return [str(value) for key in (name, alias) if key and (value := params.get(key)) is not None]


def query(request: Request[Any, Any, Any], name: str, alias: str | None = None) -> str | None:
    """The value sent under `name`, else under `alias`."""
    return next(iter(queries(request, name, alias)), None)


def flag(request: Request[Any, Any, Any], name: str, alias: str | None = None) -> bool:
    # both spellings are read: a bad value is refused even when the other spelling is given and valid
    values = [boolean(request.query_params.get(key), key) for key in (name, alias) if key]
    return next((value for value in values if value is not None), False)


def boolean(raw: str | None, name: str) -> bool | None:
    if raw is None:
        return None
    if raw.lower() in ("true", "1"):
        return True
    if raw.lower() in ("false", "0", ""):
        return False
    raise InvalidArgument(f"Expected true or false, got {raw!r}", name)
