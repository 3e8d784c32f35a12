"""What webhook deliveries came to, as Redis keeps it: a webhook's last attempts, its count of failed
events (and its disabling), and which events reached which targets (webhook_outcome.lua)."""

from __future__ import annotations

from typing import Final, Literal

from redis.asyncio import Redis

from ..sections import WebhookSettings
from . import keys
from .commands import text, typed
from .scripts import Scripts

#: retry: this attempt failed and another is queued; delivered; failed: no attempt is left (it counts
#: towards disabling the webhook); logged: an attempt that counts for nothing (a ping's)
Outcome = Literal["retry", "delivered", "failed", "logged"]

#: a target that is a request's `webhook_config` URI has no webhook: its hash key names none
_NO_WEBHOOK: Final = ""


#: a delivered mark outlives the retries of its event by this much
_MARK_MARGIN_MS = 3_600_000


class WebhookOutcomes:
    def __init__(self, redis: Redis, scripts: Scripts, settings: WebhookSettings) -> None:
        self.redis = typed(redis)
        self.scripts = scripts
        self.kept = settings.deliveries_kept
        self.disable_after = settings.disable_after_failed_events
        self.mark_ttl_ms = int(settings.retry_for_seconds * 1000) + _MARK_MARGIN_MS

    async def delivered(self, tenant: str, event_id: str, target: str) -> bool:
        """Whether this event already reached this target (a retry then sends nothing)."""
        return bool(await self.redis.exists(keys.webhook_delivered(tenant, event_id, target)))

    async def record(
        self,
        tenant: str,
        *,
        webhook_id: str | None,
        event_id: str,
        target: str,
        outcome: Outcome,
        attempt: bytes,
    ) -> str:
        """Record one attempt; returns the webhook's state afterwards ("" for a `webhook_config` target or
        a webhook deleted meanwhile)."""
        named = webhook_id or _NO_WEBHOOK
        state = await self.scripts.webhook_outcome(
            keys=[
                keys.webhook(tenant, named),
                keys.webhook_deliveries(tenant, named),
                keys.webhooks_enabled(tenant),
                keys.webhook_delivered(tenant, event_id, target),
            ],
            args=[outcome, attempt, self.kept, self.disable_after, named, self.mark_ttl_ms],
        )
        return text(state or "")
