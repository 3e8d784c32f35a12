"""The Interactions backend: `POST {base}/v1beta/interactions` (Gemini API: `x-goog-api-key`), or, when the
route's base URL names a Vertex project and location (`.../v1beta1/projects/{p}/locations/{l}`),
`POST {base}/interactions` with the key variable's value as a bearer token (an OAuth access token), or as
`x-goog-api-key` when it is a Google API key (`AIza...`: Vertex's express mode takes those)."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from ..base import UpstreamEvent, UpstreamRequest
from ..emit import check_request
from ..transport import HTTPBackend, api_key, join_url
from .decode import InteractionsDecoder
from .kind import KIND
from .request import SUPPORTED_TOOLS, build_body

#: how every Google API key begins; an access token does not
_API_KEY_PREFIX = "AIza"


class InteractionsBackend(HTTPBackend):
    kind = KIND
    default_base_url = "https://generativelanguage.googleapis.com"

    @property
    def vertex(self) -> bool:
        return "/projects/" in self.base_url and "/locations/" in self.base_url

    def check(self, request: UpstreamRequest) -> None:
        check_request(self.name, request, SUPPORTED_TOOLS)

    def url(self) -> str:
        if self.vertex:
            return self.base_url.rstrip("/") + "/interactions"
        return join_url(self.base_url, "/v1beta/interactions")

    def headers(self) -> dict[str, str]:
        key = api_key(self.route)
        if not key:
            return {}
        if self.vertex and not key.startswith(_API_KEY_PREFIX):
            return {"authorization": f"Bearer {key}"}
        return {"x-goog-api-key": key}

    def stream(self, request: UpstreamRequest) -> AsyncGenerator[UpstreamEvent, None]:
        body = build_body(request, self.name, self.upstream_model(request))
        return self._run(
            self.url(),
            {**self.headers(), "accept": "text/event-stream"},
            body,
            InteractionsDecoder(self.name),
        )
