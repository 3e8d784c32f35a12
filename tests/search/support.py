"""What the search tests share: a tenant's HTTP client, interactions made through the SDK, list reads."""

from __future__ import annotations

from typing import Any

import httpx
import redis
from google import genai

from server.store import keys

from ..replies import interaction
from ..support import Stack, is_usage_key, sdk, tenant_of


class Tenant:
    """One API key on a stack: the SDK for creating, plain HTTP for our extension (the SDK has no list)."""

    def __init__(self, stack: Stack, api_key: str) -> None:
        self.stack = stack
        self.id = tenant_of(api_key)
        self.sdk: genai.Client = sdk(stack.url, api_key)
        self.http = httpx.Client(base_url=stack.url, headers={"x-goog-api-key": api_key}, timeout=30)

    def close(self) -> None:
        self.http.close()

    def turn(
        self, text: str, *, labels: dict[str, str] | None = None, after: str | None = None, **extra: Any
    ) -> str:
        """A foreground echo turn (continuing `after`), its id."""
        if "agent" not in extra:
            extra.setdefault("model", "echo")
        created = interaction(
            self.sdk.interactions.create(input=text, labels=labels, previous_interaction_id=after, **extra)
        )
        assert created.id is not None
        return created.id

    def listed(self, **params: Any) -> dict[str, Any]:
        reply = self.http.get("/v1beta/interactions", params=params)
        assert reply.status_code == 200, reply.text
        body: dict[str, Any] = reply.json()
        return body

    def ids(self, **params: Any) -> list[str]:
        """Every id the list gives, page after page."""
        found: list[str] = []
        while True:
            page = self.listed(**params)
            found += [item["id"] for item in page["interactions"]]
            token = page.get("next_page_token")
            if not token:
                return found
            params = {**params, "page_token": token}

    def keys(self) -> list[str]:
        """Every key of this tenant in the stack's Redis but its usage totals (which outlive what it
        stored: keys.usage)."""
        store = redis.Redis.from_url(self.stack.redis_url)
        try:
            pattern = keys.tenant_prefix(self.id).replace("{", "[{]") + "*"
            found = [name.decode() for name in store.scan_iter(match=pattern, count=1000)]
            return [name for name in found if not is_usage_key(name)]
        finally:
            store.close()

    def error(self, method: str, path: str, **kwargs: Any) -> tuple[int, str]:
        reply = self.http.request(method, path, **kwargs)
        assert reply.status_code >= 400, reply.text
        return reply.status_code, reply.json()["error"]["message"]
