"""Where OpenAI's dialects are served: `/v1`, the openai SDKs' own path under the base URL the README gives
them, and `/openai/v1`, for a client that must tell the two dialects apart by path (a proxy, a gateway).

`/v1` is routed as the parameter Google's routes have there (`/{version}`), and every handler's first
step (`state_of`) answers 404 for any other version: litestar's router takes a literal segment over a
parameter and never falls back from it, so a literal `/v1` would hide every Google route of `v1`
(`/v1/interactions` would be "no route"). Not a guard of the router: litestar runs a plain function guard
in a thread and hands it a copy of the handler, which cost a stored create 7 % more server CPU."""

from __future__ import annotations

from typing import Any

from litestar import Request
from litestar.exceptions import NotFoundException

from ..common import app_state
from ..state import AppState

BASES = ("/{version:str}", "/openai/v1")
#: the one version OpenAI's routes serve on their first base
VERSION = "v1"


def paths(suffix: str) -> list[str]:
    """`suffix` (`/responses`) under every base."""
    return [f"{base}{suffix}" for base in BASES]


def state_of(request: Request[Any, Any, Any]) -> AppState:
    """The app's state for a handler under BASES: a 404 for a version segment other than VERSION."""
    version = request.path_params.get("version")
    if version is not None and version != VERSION:
        raise NotFoundException()
    return app_state(request)
