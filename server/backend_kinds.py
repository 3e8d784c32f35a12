"""The backend kinds a models.toml route may name: one row each, read by the config (the `backend` values it
accepts), the router (what serves a route), the models list, the traces (the provider's name) and each
backend's check (the tools it runs). Adding a backend is a package under server/upstream/ and a row here.

Pure data, at the bottom of the layers, so that the config can be checked without importing a backend."""

from __future__ import annotations

from typing import Final, NamedTuple


class Kind(NamedTuple):
    #: "module:Class" taking a ModelRoute, imported when a route needs it; None: served in this process
    #: (the echo models, which upstream/routing.py builds from the [echo] settings)
    factory: str | None
    #: gen_ai.provider.name of the OpenTelemetry GenAI conventions; the kind itself where they name none
    provider: str
    #: the tool types it takes (`mcp_server` aside: this server runs those, the model gets functions);
    #: NEWER: also the types newer than this server, which go on as they came
    tools: frozenset[str] = frozenset({"function"})
    #: how long each word of an answer waits, in [echo] slow_word_delay_ms; only for the built-in kinds
    slow: bool = False


NEWER: Final = "*"
#: the built-in tools Gemini runs through generateContent
_GEMINI_TOOLS: Final = frozenset(
    {
        "function",
        "google_search",
        "code_execution",
        "url_context",
        "google_maps",
        "file_search",
        "computer_use",
    }
)

KINDS: Final[dict[str, Kind]] = {
    "echo": Kind(None, "echo"),
    "echo-slow": Kind(None, "echo", slow=True),
    "gemini": Kind("server.upstream.gemini:GeminiBackend", "gcp.gemini", _GEMINI_TOOLS),
    "openai": Kind("server.upstream.openai:OpenAIBackend", "openai"),
    "anthropic": Kind("server.upstream.anthropic:AnthropicBackend", "anthropic"),
    # Google's Interactions API: Google's agents and every built-in tool (server/upstream/interactions)
    "interactions": Kind(
        "server.upstream.interactions:InteractionsBackend", "gcp.gemini", _GEMINI_TOOLS | {"retrieval", NEWER}
    ),
}
#: the kinds served in this process; each is also a model name that needs no route
BUILTIN_MODELS: Final = tuple(name for name, kind in KINDS.items() if kind.factory is None)


def provider(kind: str) -> str:
    """The GenAI conventions' provider name of a backend kind (a name this table lacks is its own)."""
    row = KINDS.get(kind)
    return row.provider if row is not None else kind
