"""Model routing: the requested model (or agent) name -> a backend and the upstream model name."""

from __future__ import annotations

import fnmatch
import importlib
from collections.abc import AsyncGenerator, Callable

from ..backend_kinds import BUILTIN_MODELS, KINDS
from ..errors import InvalidArgument
from ..outbound import Outbound
from ..protocol.interaction import InteractionConfig
from ..settings import EchoSettings, ModelRoute
from .base import Backend, UpstreamError, UpstreamEvent, UpstreamRequest
from .echo import EchoBackend


class Router:
    """`outbound`: the proxies and trust store every backend's calls follow (None: the environment's)."""

    def __init__(
        self, routes: list[ModelRoute], echo: EchoSettings, outbound: Outbound | None = None
    ) -> None:
        self.routes = routes
        self.builtin: dict[str, Backend] = {name: _echo(name, name, echo) for name in BUILTIN_MODELS}
        if outbound is None and routes:
            outbound = Outbound.from_environment()  # one for every route: the trust store loaded once
        self.backends: list[Backend] = [_make(route, echo, outbound) for route in routes]

    def resolve(self, name: str, field: str = "model") -> tuple[Backend, str]:
        """(backend, upstream model name) for a requested name, or a 400 that lists what exists."""
        for route, backend in zip(self.routes, self.backends, strict=True):
            if fnmatch.fnmatchcase(name, route.match):
                missing = route.missing_key()
                if missing is not None:
                    return Unkeyed(backend, missing), route.upstream_model or name
                return backend, route.upstream_model or name
        builtin = self.builtin.get(name)
        if builtin is not None:
            return builtin, name
        known = ", ".join([*BUILTIN_MODELS, *(r.match for r in self.routes)])
        raise InvalidArgument(f"Unknown {field} {name!r}. Available: {known}", field)

    def route(self, config: InteractionConfig) -> tuple[Backend, str]:
        """(backend, upstream model name) for the model or agent a request names."""
        if config.model:
            return self.resolve(config.model, "model")
        return self.resolve(config.agent or "", "agent")

    async def aclose(self) -> None:
        for backend in self.backends:
            await backend.aclose()


class Unkeyed:
    """A route whose key variable is unset: its calls fail before any HTTP, naming the variable.

    Without it the backend would call the provider with no key and the client would read "rejected this
    server's credentials", which does not say which variable to set. The check is here, where requests are
    routed, rather than in the backends, which stay usable without a key on their own.
    """

    def __init__(self, backend: Backend, message: str) -> None:
        self.backend = backend
        self.name = backend.name
        self.message = message

    def check(self, request: UpstreamRequest) -> None:
        self.backend.check(request)

    def stream(self, request: UpstreamRequest) -> AsyncGenerator[UpstreamEvent, None]:
        raise UpstreamError(self.name, 0, self.message, misconfigured=True)

    async def aclose(self) -> None:
        """The backend's connections are the router's to close."""


def _make(route: ModelRoute, echo: EchoSettings, outbound: Outbound | None) -> Backend:
    kind = KINDS.get(route.backend)
    if kind is None:
        raise ValueError(f"models.toml: unknown backend {route.backend!r} for {route.match!r}")
    if kind.factory is None:
        return _echo(route.backend, route.match, echo)
    module_name, _, class_name = kind.factory.partition(":")
    factory: Callable[[ModelRoute, Outbound | None], Backend] = getattr(
        importlib.import_module(module_name), class_name
    )
    return factory(route, outbound)


def _echo(kind: str, name: str, echo: EchoSettings) -> EchoBackend:
    delay = echo.slow_word_delay_ms / 1000 if KINDS[kind].slow else 0.0
    return EchoBackend(name, delay, echo.max_output_words)
