"""The Anthropic backend: `/v1/messages` under the route's base URL, with the API version and key headers, and
`/v1/messages/count_tokens` for the generateContent dialect's count (runner/counting.py)."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import msgspec

from ..base import UpstreamError, UpstreamEvent, UpstreamRequest
from ..emit import check_request
from ..transport import HTTPBackend, api_key, join_url, post_stream
from .decode import AnthropicDecoder
from .request import build_body, check_content
from .wire import API_VERSION, KIND, CountTokensRequest, CountTokensResponse


class AnthropicBackend(HTTPBackend):
    kind = KIND
    default_base_url = "https://api.anthropic.com"

    def check(self, request: UpstreamRequest) -> None:
        check_request(self.name, request, self.kind, check_content)

    def url(self, path: str = "/v1/messages") -> str:
        return join_url(self.base_url, path)

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

    async def count_tokens(self, request: UpstreamRequest) -> int:
        """Anthropic's own count of what the turn would send (its system prompt, tools and thinking too)."""
        body = build_body(request, self.name)
        fields = ("messages", "system", "thinking", "tools", "tool_choice")
        count = CountTokensRequest(
            model=self.upstream_model(request), **{f: getattr(body, f) for f in fields}
        )
        chunks = post_stream(
            self.client,
            self.name,
            self.url("/v1/messages/count_tokens"),
            self.headers(),
            count,
            deadline_seconds=self.route.deadline_seconds,
        )
        raw = b"".join([chunk async for chunk in chunks])
        try:
            return msgspec.json.decode(raw, type=CountTokensResponse).input_tokens
        except msgspec.DecodeError:
            raise UpstreamError(self.name, 0, "count_tokens answered no input_tokens") from None
