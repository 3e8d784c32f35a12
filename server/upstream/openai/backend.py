"""The OpenAI-compatible backend: `/v1/chat/completions` under the route's base URL, with a bearer key."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from ..base import UpstreamEvent, UpstreamRequest
from ..emit import check_request
from ..transport import HTTPBackend, api_key, join_url
from .decode import OpenAIDecoder
from .request import build_body, check_content
from .wire import KIND


class OpenAIBackend(HTTPBackend):
    kind = KIND
    default_base_url = "https://api.openai.com/v1"

    def check(self, request: UpstreamRequest) -> None:
        check_request(self.name, request, self.kind, check_content)

    def url(self) -> str:
        return join_url(self.base_url, "/v1/chat/completions")

    def headers(self) -> dict[str, str]:
        key = api_key(self.route)
        return {"authorization": f"Bearer {key}"} if key else {}

    def stream(self, request: UpstreamRequest) -> AsyncGenerator[UpstreamEvent, None]:
        body = build_body(request, self.base_url)
        body.model = self.upstream_model(request)
        return self._run(self.url(), self.headers(), body, OpenAIDecoder(self.name))
