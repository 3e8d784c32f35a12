"""The Webhooks resource (spec §1): create, list, get, update, delete, rotate a tenant's webhooks.

Secrets are made here, shown once (`new_signing_secret` on create, `secret` on rotate) and stored only
sealed with the server key under `secrets.secret_context(tenant, id)`. URIs are checked (addresses.py) at
create and at every update that sets one. Updates and rotations are compare-and-set on the record as read,
retried a few times, so concurrent writers never lose each other's changes; every rewrite drops the
secrets already expired.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import msgspec
from msgspec import UNSET

from ..errors import InvalidArgument, LimitReached, WebhookNotFound
from ..protocol import paging
from ..sections import WebhookSettings
from ..store.webhooks import ENABLED, StoredSecret, WebhookRecord, Webhooks
from . import rules, secrets
from .addresses import AllowList, Resolver, check_uri, system_resolver
from .wire import CreateWebhook, RotatedSecret, UpdateWebhook, Webhook, WebhookList, view

#: compare-and-set rounds lost to other writers before giving up (each loss is another request's write)
WRITE_ATTEMPTS = 8


class WebhookResource:
    def __init__(
        self,
        store: Webhooks,
        settings: WebhookSettings,
        server_keys: Sequence[bytes],
        *,
        resolver: Resolver = system_resolver,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.settings = settings
        self.server_keys = list(server_keys)
        self.allow = AllowList.parse(settings.allow)
        self.resolver = resolver
        self.clock = clock

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    async def _uri(self, value: str | None) -> str:
        if not value:
            raise InvalidArgument("a webhook needs a uri", "uri")
        return (await check_uri(value, self.allow, self.resolver)).uri

    def _secret(self, tenant: str, webhook_id: str, expire_ms: int | None = None) -> tuple[str, StoredSecret]:
        plain = secrets.new_secret()
        sealed = secrets.seal(
            plain.encode(), self.server_keys[0], context=secrets.secret_context(tenant, webhook_id)
        )
        return plain, StoredSecret(sealed, secrets.truncated(plain), expire_ms)

    async def create(self, tenant: str, body: CreateWebhook) -> Webhook:
        events = rules.events(body.subscribed_events)
        name = rules.name(body.name)
        uri = await self._uri(body.uri)
        webhook_id, now = rules.new_id(), self.now_ms()
        plain, secret = self._secret(tenant, webhook_id)
        record = WebhookRecord(webhook_id, name, uri, events, ENABLED, [secret], now, now)
        if not await self.store.create(tenant, record, self.settings.max_webhooks):
            raise LimitReached(
                f"This API key has {self.settings.max_webhooks} webhooks, the most it may have "
                "(webhooks.max_webhooks): delete one first"
            )
        return view(record, now, new_secret=plain)

    async def record(self, tenant: str, webhook_id: str) -> WebhookRecord:
        found = await self.store.get(tenant, rules.checked_id(webhook_id))
        if found is None:
            raise WebhookNotFound(webhook_id)
        return found

    async def get(self, tenant: str, webhook_id: str) -> Webhook:
        return view(await self.record(tenant, webhook_id), self.now_ms())

    async def page(self, tenant: str, page_size: str | None, page_token: str | None) -> WebhookList:
        """The tenant's webhooks, oldest first (by creation), `page_size` at a time."""
        size = paging.page_size(page_size, rules.DEFAULT_PAGE_SIZE, rules.MAX_PAGE_SIZE)
        after = paging.after_token(page_token, rules.is_webhook_id)
        # one more than asked: whether there is a next page at all
        found = await self.store.page(tenant, after, size + 1)
        shown, more = found[:size], len(found) > size
        records = await self.store.many(tenant, [webhook_id for _, webhook_id in shown])
        now = self.now_ms()
        token = paging.page_token(shown[-1]) if more and shown else None
        return WebhookList(webhooks=[view(each, now) for each in records], next_page_token=token)

    async def deliveries(self, tenant: str, webhook_id: str, page_size: str | None) -> list[bytes]:
        """The webhook's last delivery attempts, newest first (this server's extension)."""
        await self.record(tenant, webhook_id)
        most = self.settings.deliveries_kept
        return await self.store.deliveries(tenant, webhook_id, paging.page_size(page_size, most, most))

    async def delete(self, tenant: str, webhook_id: str) -> None:
        if not await self.store.delete(tenant, rules.checked_id(webhook_id)):
            raise WebhookNotFound(webhook_id)

    async def update(
        self, tenant: str, webhook_id: str, body: UpdateWebhook, update_mask: str | None
    ) -> Webhook:
        """Masked fields change (absent from the body: cleared, or refused where required); without a
        mask, the fields present in the body."""
        rules.checked_id(webhook_id)
        paths = rules.mask(update_mask) if update_mask is not None else _present(body)
        changes: dict[str, object] = {}
        if "name" in paths:
            changes["name"] = rules.name(None if body.name is UNSET else body.name)
        if "subscribed_events" in paths:
            changes["subscribed_events"] = rules.events(
                None if body.subscribed_events is UNSET else body.subscribed_events
            )
        if "state" in paths:
            changes["state"] = rules.user_state(None if body.state is UNSET else body.state)
        if "uri" in paths:
            changes["uri"] = await self._uri(None if body.uri is UNSET else body.uri)
        return await self._rewrite(tenant, webhook_id, changes, set_state="state" in paths)

    async def rotate(self, tenant: str, webhook_id: str, behavior: str | None) -> RotatedSecret:
        """A new current secret; the previous ones (still valid) expire after the overlap, or at once."""
        immediately = rules.revocation(behavior) == "revoke_previous_secrets_immediately"
        plain, secret = self._secret(tenant, rules.checked_id(webhook_id))
        await self._rewrite(tenant, webhook_id, {}, new_secret=secret, drop_previous=immediately)
        return RotatedSecret(secret=plain)

    async def _rewrite(
        self,
        tenant: str,
        webhook_id: str,
        changes: dict[str, object],
        *,
        set_state: bool = False,
        new_secret: StoredSecret | None = None,
        drop_previous: bool = False,
    ) -> Webhook:
        for _ in range(WRITE_ATTEMPTS):
            seen = await self.record(tenant, webhook_id)
            now = self.now_ms()
            kept = seen.valid_secrets(now)
            if new_secret is not None:
                until = now + int(self.settings.secret_overlap_seconds * 1000)
                previous = [] if drop_previous else [_expiring(each, until) for each in kept]
                kept = [new_secret, *previous]
            new = _replaced(seen, changes, kept, now)
            done = await self.store.write(tenant, seen, new, set_state=set_state)
            if done.gone:
                raise WebhookNotFound(webhook_id)
            if done.written:
                return view(new, now)
        raise RuntimeError(f"webhook {webhook_id} kept changing while it was updated")


def _present(body: UpdateWebhook) -> list[str]:
    present = [path for path in rules.MASKABLE if getattr(body, path) is not UNSET]
    if not present:
        raise InvalidArgument(f"nothing to update: send some of {', '.join(rules.MASKABLE)}", "update_mask")
    return present


def _expiring(secret: StoredSecret, until: int) -> StoredSecret:
    """A replaced secret keeps its earlier expiry, if it had one."""
    expire = until if secret.expire_ms is None else min(secret.expire_ms, until)
    return StoredSecret(secret.sealed, secret.truncated, expire)


def _replaced(
    seen: WebhookRecord, changes: dict[str, object], kept: list[StoredSecret], now: int
) -> WebhookRecord:
    return msgspec.structs.replace(seen, **changes, secrets=kept, update_ms=max(now, seen.update_ms + 1))
