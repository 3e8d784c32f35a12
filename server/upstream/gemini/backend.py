"""The Gemini backend: `models/{m}:streamGenerateContent?alt=sse` under the route's base URL, and
`models/{m}:countTokens` for the generateContent dialect's count (runner/counting.py)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from urllib.parse import quote

import msgspec

from ...dialects.generate import wire
from ..base import UpstreamError, UpstreamEvent, UpstreamRequest
from ..emit import check_request
from ..transport import HTTPBackend, api_key, join_url, post_stream
from .decode import GeminiDecoder
from .kind import KIND
from .request import build_body


class GeminiBackend(HTTPBackend):
    kind = KIND
    default_base_url = "https://generativelanguage.googleapis.com"

    def check(self, request: UpstreamRequest) -> None:
        check_request(self.name, request, self.kind)

    def url(self, request: UpstreamRequest, method: str = "streamGenerateContent") -> str:
        model = quote(self.upstream_model(request).removeprefix("models/"), safe="-._~")
        url = join_url(self.base_url, f"/v1beta/models/{model}:{method}")
        return url + "?alt=sse" if method == "streamGenerateContent" else url

    def headers(self) -> dict[str, str]:
        key = api_key(self.route)
        return {"x-goog-api-key": key} if key else {}

    def stream(self, request: UpstreamRequest) -> AsyncGenerator[UpstreamEvent, None]:
        return self._run(
            self.url(request), self.headers(), build_body(request, self.name), GeminiDecoder(self.name)
        )

    async def count_tokens(self, request: UpstreamRequest) -> int:
        """Gemini's own count of what a turn would send (its system instruction and tools included)."""
        body = build_body(request, self.name)
        body.model = "models/" + self.upstream_model(request).removeprefix("models/")
        count = wire.CountTokensRequest(generate_content_request=body)
        chunks = post_stream(
            self.client,
            self.name,
            self.url(request, "countTokens"),
            self.headers(),
            count,
            deadline_seconds=self.route.deadline_seconds,
        )
        raw = b"".join([chunk async for chunk in chunks])
        try:
            return msgspec.json.decode(raw, type=wire.CountTokensResponse).total_tokens
        except msgspec.DecodeError:
            raise UpstreamError(self.name, 0, "countTokens answered no totalTokens") from None
