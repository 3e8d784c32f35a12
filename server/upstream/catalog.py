"""The models this server lists (GET /{v}/models): the built-in echo models and every configured route whose
`match` is a literal name (`listed`), in Google's `Model` format here (pure); OpenAI's shape of the same list
is api/openai/models.py's.

A glob route (`gpt-*`) serves many names and none of them can be listed as one model. A listed model says
which backend kind serves it, as routing resolves the name (the first route that fits, then the built-ins),
and nothing else of the upstream: no base URL, no key variable, no upstream model name.
"""

from __future__ import annotations

import fnmatch
from typing import Final, NamedTuple

import msgspec

from ..backend_kinds import BUILTIN_MODELS, KINDS
from ..errors import InvalidArgument
from ..protocol.paging import page_size
from ..settings import EchoSettings, ModelRoute

#: what a listed model can be used for here: Gemini's generateContent dialect (api/generate.py; its stream
#: is not listed apart, as Google lists none) and the Interactions API's create, for every model
METHODS: Final = ("generateContent", "countTokens", "createInteraction")
#: list paging, as the other lists: 50 by default, 1000 at most (more is read as 1000, AIP-158)
DEFAULT_PAGE_SIZE: Final = 50
MAX_PAGE_SIZE: Final = 1000
#: a page token is where the next page starts; opaque to clients (pass nextPageToken as it came)
#: (empty: the first page, as no token)
PAGE_TOKEN_PATTERN: Final = "^([1-9][0-9]{0,5})?$"
_GLOB: Final = frozenset("*?[")


class Model(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """google.ai.generativelanguage Model, as the Gemini API answers it (what the SDK's `Model` reads)."""

    #: `models/<id>`
    name: str
    display_name: str
    description: str
    input_token_limit: int | None = None
    output_token_limit: int | None = None
    supported_generation_methods: list[str] = msgspec.field(default_factory=lambda: list(METHODS))


class ModelList(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    models: list[Model]
    #: set when there are more
    next_page_token: str | None = None


def is_literal(match: str) -> bool:
    return not _GLOB & set(match)


class Listed(NamedTuple):
    """A listable model: its name, the backend kind that serves it, whether it is a built-in."""

    name: str
    kind: str
    builtin: bool


def listed(routes: list[ModelRoute]) -> list[Listed]:
    """Every listable model: the configured literal names in the file's order, then the built-ins."""
    names = [route.match for route in routes if is_literal(route.match)]
    found: list[Listed] = []
    for name in dict.fromkeys([*names, *BUILTIN_MODELS]):
        route = next((r for r in routes if fnmatch.fnmatchcase(name, r.match)), None)
        found.append(Listed(name, name if route is None else route.backend, route is None))
    return found


def catalogue(routes: list[ModelRoute], echo: EchoSettings) -> list[Model]:
    """Every listable model in Google's format."""
    return [_model(each.name, each.kind, each.builtin, echo) for each in listed(routes)]


def _model(name: str, kind: str, builtin: bool, echo: EchoSettings) -> Model:
    if kind in BUILTIN_MODELS:
        how = "repeats the input's text back" + (
            f", one word every {echo.slow_word_delay_ms} ms" if KINDS[kind].slow else ""
        )
        where = "a built-in test model" if builtin else "a configured test model"
        return Model(
            name=f"models/{name}",
            display_name=name,
            description=f"{where.capitalize()}: {how} (served by the {kind} backend of this server)",
            output_token_limit=echo.max_output_words,
        )
    return Model(name=f"models/{name}", display_name=name, description=f"Served by the {kind} backend")


def find(models: list[Model], name: str) -> Model | None:
    """The model `name` names (`echo` or `models/echo`), or None."""
    wanted = f"models/{name.removeprefix('models/')}"
    return next((model for model in models if model.name == wanted), None)


def page(models: list[Model], sizes: list[str], tokens: list[str]) -> ModelList:
    """One page; each spelling sent of the size and the token is checked, and the first one used."""
    size = next(iter([page_size(raw, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE) for raw in sizes]), DEFAULT_PAGE_SIZE)
    start = next(iter([_start(raw) for raw in tokens]), 0)
    shown = models[start : start + size]
    more = start + size < len(models)
    return ModelList(models=shown, next_page_token=str(start + size) if more else None)


def _start(raw: str) -> int:
    if not raw:
        return 0
    if raw.isascii() and raw.isdigit() and not raw.startswith("0") and len(raw) <= 6:
        return int(raw)
    raise InvalidArgument("not a page token of this list (pass nextPageToken as it came)", "page_token")
