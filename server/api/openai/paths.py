"""Where OpenAI's dialects are served: `/v1`, the openai SDKs' own path under the base URL the README gives
them, and `/openai/v1`, for a client that must tell the two dialects apart by path (a proxy, a gateway)."""

from __future__ import annotations

BASES = ("/v1", "/openai/v1")


def paths(suffix: str) -> list[str]:
    """`suffix` (`/responses`) under every base."""
    return [f"{base}{suffix}" for base in BASES]
