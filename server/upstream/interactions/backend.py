"""The Interactions backend: `POST {base}/v1beta/interactions` (Gemini API: `x-goog-api-key`), or, when the
route's base URL names a Vertex project and location (`.../v1beta1/projects/{p}/locations/{l}`),
`POST {base}/interactions` with the key variable's value as a bearer token (an OAuth access token), or as
`x-goog-api-key` when it is a Google API key (`AIza...`: Vertex's express mode takes those).

A model turn is one stateless streamed call; an agent's turn is a remote run (remote.py), which this
backend also follows, cancels and deletes (`base.RemoteRuns`)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Final
from urllib.parse import quote, urlencode

import msgspec

from ...errors import InvalidArgument
from ...protocol.tools import McpServerTool
from ..base import UpstreamError, UpstreamEvent, UpstreamRequest
from ..emit import check_request
from ..transport import HTTPBackend, api_key, join_url, post_stream
from . import remote
from .decode import InteractionsDecoder
from .kind import KIND
from .request import build_body

#: how every Google API key begins; an access token does not
_API_KEY_PREFIX: Final = "AIza"
_SSE: Final = {"accept": "text/event-stream"}
#: answers to a cancel or a delete that leave nothing to do: it has ended already, or is gone
_NOTHING_TO_DO: Final = frozenset({400, 404})


class InteractionsBackend(HTTPBackend):
    kind = KIND
    default_base_url = "https://generativelanguage.googleapis.com"

    @property
    def vertex(self) -> bool:
        return "/projects/" in self.base_url and "/locations/" in self.base_url

    def check(self, request: UpstreamRequest) -> None:
        check_request(self.name, request, self.kind)
        if not request.config.agent:
            return
        if not request.background:
            raise InvalidArgument(
                f"The agent {request.config.agent!r} runs on Google as a background interaction: "
                "create it with background=true",
                "background",
            )
        for index, tool in enumerate(request.config.tools or ()):
            if isinstance(tool, McpServerTool):
                raise InvalidArgument(
                    f"An agent of the {self.name} backend runs its own tools: mcp_server tools are run by "
                    "this server for model turns only",
                    f"tools[{index}]",
                )

    def url(self, remote_id: str | None = None) -> str:
        base = (
            self.base_url.rstrip("/") + "/interactions"
            if self.vertex
            else join_url(self.base_url, "/v1beta/interactions")
        )
        return base if remote_id is None else f"{base}/{quote(remote_id, safe='')}"

    def headers(self) -> dict[str, str]:
        key = api_key(self.route)
        if not key:
            return {}
        if self.vertex and not key.startswith(_API_KEY_PREFIX):
            return {"authorization": f"Bearer {key}"}
        return {"x-goog-api-key": key}

    def stream(self, request: UpstreamRequest) -> AsyncGenerator[UpstreamEvent, None]:
        if request.config.agent:
            return remote.run(self, request)
        body = build_body(request, self.name, self.upstream_model(request))
        return self._run(self.url(), {**self.headers(), **_SSE}, body, InteractionsDecoder(self.name))

    # -- remote runs (remote.py) -------------------------------------------------------------------------

    def create_remote(self, request: UpstreamRequest) -> AsyncGenerator[bytes, None]:
        body = build_body(request, self.name, self.upstream_model(request), remote=True)
        return self._call("POST", self.url(), body=body, stream=True)

    def follow(self, remote_id: str, last_event_id: str | None) -> AsyncGenerator[bytes, None]:
        query = {"stream": "true", **({"last_event_id": last_event_id} if last_event_id else {})}
        return self._call("GET", f"{self.url(remote_id)}?{urlencode(query)}", stream=True)

    async def read_remote(self, remote_id: str) -> bytes:
        return b"".join([chunk async for chunk in self._call("GET", self.url(remote_id))])

    async def cancel_remote(self, remote_id: str) -> None:
        await self._done(self._call("POST", self.url(remote_id) + "/cancel"))

    async def delete_remote(self, remote_id: str) -> None:
        await self._done(self._call("DELETE", self.url(remote_id)))

    def _call(
        self, method: str, url: str, *, body: msgspec.Struct | None = None, stream: bool = False
    ) -> AsyncGenerator[bytes, None]:
        headers = {**self.headers(), **(_SSE if stream else {})}
        return post_stream(
            self.client,
            self.name,
            url,
            headers,
            body,
            deadline_seconds=self.route.deadline_seconds,
            method=method,
        )

    @staticmethod
    async def _done(chunks: AsyncGenerator[bytes, None]) -> None:
        try:
            async for _chunk in chunks:
                pass
        except UpstreamError as exc:
            if exc.status not in _NOTHING_TO_DO:
                raise
