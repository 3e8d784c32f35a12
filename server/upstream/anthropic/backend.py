"""The Anthropic backend: `/v1/messages` under the route's base URL, with the API version and key headers."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from ..base import UpstreamEvent, UpstreamRequest
from ..emit import check_request
from ..transport import HTTPBackend, api_key, join_url
from .decode import AnthropicDecoder
from .request import build_body, check_content
from .wire import API_VERSION, KIND


class AnthropicBackend(HTTPBackend):
    kind = KIND
    default_base_url = "https://api.anthropic.com"

    def check(self, request: UpstreamRequest) -> None:
        check_request(self.name, request, self.kind, check_content)

    def url(self) -> str:
        return join_url(self.base_url, "/v1/messages")

    def headers(self) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION}
        key = api_key(self.route)
        if key:
            headers["x-api-key"] = key
        return headers

    def stream(self, request: UpstreamRequest) -> AsyncGenerator[UpstreamEvent, None]:
        body = build_body(request, self.name)
        body.model = self.upstream_model(request)
        return self._run(self.url(), self.headers(), body, AnthropicDecoder(self.name))
