"""The Gemini backend: `models/{m}:streamGenerateContent?alt=sse` under the route's base URL."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from urllib.parse import quote

from ..base import UpstreamEvent, UpstreamRequest
from ..emit import check_request
from ..transport import HTTPBackend, api_key, join_url
from .decode import GeminiDecoder
from .kind import KIND
from .request import SUPPORTED_TOOLS, build_body


class GeminiBackend(HTTPBackend):
    kind = KIND
    default_base_url = "https://generativelanguage.googleapis.com"

    def check(self, request: UpstreamRequest) -> None:
        check_request(self.name, request, SUPPORTED_TOOLS)

    def url(self, request: UpstreamRequest) -> str:
        model = quote(self.upstream_model(request).removeprefix("models/"), safe="-._~")
        return join_url(self.base_url, f"/v1beta/models/{model}:streamGenerateContent") + "?alt=sse"

    def headers(self) -> dict[str, str]:
        key = api_key(self.route)
        return {"x-goog-api-key": key} if key else {}

    def stream(self, request: UpstreamRequest) -> AsyncGenerator[UpstreamEvent, None]:
        return self._run(
            self.url(request), self.headers(), build_body(request, self.name), GeminiDecoder(self.name)
        )
