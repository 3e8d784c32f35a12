"""Where OpenAI's dialects are served: `/v1`, the openai SDKs' own path under the base URL the README gives
them, and `/openai/v1`, for a client that must tell the two dialects apart by path (a proxy, a gateway).

`/v1` is routed as the parameter Google's routes have there (`/{version}`), and a guard of OpenAI's
router (errors.py) answers 404 for any other version: litestar's router takes a literal segment over a
parameter and never falls back from it, so a literal `/v1` would hide every Google route of `v1`
(`/v1/interactions` would be "no route")."""

from __future__ import annotations

BASES = ("/{version:str}", "/openai/v1")
#: the one version OpenAI's routes serve on their first base
VERSION = "v1"


def paths(suffix: str) -> list[str]:
    """`suffix` (`/responses`) under every base."""
    return [f"{base}{suffix}" for base in BASES]
