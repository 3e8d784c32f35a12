"""A tenant's webhooks, as Redis keeps them (keys.webhooks, keys.webhook, keys.webhooks_enabled).

Records only: validation, sealing secrets and the wire shapes are server/webhooks/resource.py. One hash per
webhook (keys.WebhookField names its fields): the owner's fields as one JSON object, and next to it the
state, the secrets and the failure count, which the delivery pipeline changes by itself. Every write is a
script, so the enabled set always holds exactly the enabled ids (the delivery pipeline reads only it).
"""

from __future__ import annotations

import msgspec
from redis.asyncio import Redis

from . import keys
from .commands import oldest_first, text, typed
from .keys import WebhookField
from .scripts import Scripts

ENABLED = "enabled"


class StoredSecret(msgspec.Struct, frozen=True):
    #: the secret sealed with the server key (server/webhooks/secrets.py), under secret_context()
    sealed: str
    #: what `signing_secrets[].truncated_secret` shows
    truncated: str
    #: when it stops signing (ms); None: never (the current one)
    expire_ms: int | None = None


class StoredResource(msgspec.Struct, frozen=True):
    """The owner's fields (WebhookField.RESOURCE), one JSON object: an update rewrites them at once."""

    id: str
    uri: str
    subscribed_events: list[str]
    create_ms: int
    update_ms: int
    name: str | None = None


class WebhookRecord(msgspec.Struct, frozen=True):
    id: str
    name: str | None
    uri: str
    subscribed_events: list[str]
    state: str
    secrets: list[StoredSecret]
    create_ms: int
    update_ms: int
    #: the resource's JSON as read: a write compares it, so that two writers cannot both win
    raw: bytes = b""

    def valid_secrets(self, now_ms: int) -> list[StoredSecret]:
        """The secrets that sign now, current first (expired ones are dropped)."""
        return [each for each in self.secrets if each.expire_ms is None or each.expire_ms > now_ms]


class WriteResult(msgspec.Struct, frozen=True):
    written: bool
    #: the webhook vanished (deleted meanwhile)
    gone: bool = False


_resource = msgspec.json.Decoder(StoredResource)
_secrets = msgspec.json.Decoder(list[StoredSecret])
_encode = msgspec.json.encode


def resource_of(record: WebhookRecord) -> bytes:
    return _encode(
        StoredResource(
            record.id, record.uri, record.subscribed_events, record.create_ms, record.update_ms, record.name
        )
    )


def _record(fields: dict[str, bytes]) -> WebhookRecord | None:
    raw = fields.get(WebhookField.RESOURCE)
    if raw is None:
        return None
    res = _resource.decode(raw)
    secrets = _secrets.decode(fields.get(WebhookField.SECRETS) or b"[]")
    state = text(fields.get(WebhookField.STATE) or ENABLED)
    return WebhookRecord(
        res.id, res.name, res.uri, res.subscribed_events, state, secrets, res.create_ms, res.update_ms, raw
    )


def _pairs(flat: list[bytes]) -> dict[str, bytes]:
    return {text(flat[i]): flat[i + 1] for i in range(0, len(flat) - 1, 2)}


class Webhooks:
    def __init__(self, redis: Redis, scripts: Scripts) -> None:
        self.redis = typed(redis)
        self.scripts = scripts

    async def get(self, tenant: str, webhook_id: str) -> WebhookRecord | None:
        fields = await self.redis.hgetall(keys.webhook(tenant, webhook_id))
        return _record({text(name): value for name, value in fields.items()})

    async def enabled(self, tenant: str) -> list[WebhookRecord]:
        """The enabled webhooks (read the set, then the hashes; ones deleted meanwhile are skipped)."""
        ids = sorted(text(each) for each in await self.redis.smembers(keys.webhooks_enabled(tenant)))
        return await self.many(tenant, ids)

    async def many(self, tenant: str, ids: list[str]) -> list[WebhookRecord]:
        """The webhooks of `ids` that still exist, in that order, in one round trip."""
        if not ids:
            return []
        found = await self.scripts.webhook_read(keys=[keys.webhook(tenant, each) for each in ids])
        records = (_record(_pairs(flat)) for flat in found)
        return [record for record in records if record is not None]

    async def deliveries(self, tenant: str, webhook_id: str, limit: int) -> list[bytes]:
        """The last `limit` delivery attempts (JSON objects), newest first."""
        if limit <= 0:
            return []
        return await self.redis.lrange(keys.webhook_deliveries(tenant, webhook_id), 0, limit - 1)

    async def page(self, tenant: str, after: tuple[int, str] | None, count: int) -> list[tuple[int, str]]:
        """Up to `count` (creation ms, id) of the tenant's webhooks, oldest first, after the one given.

        Ids created in the same millisecond share a score and come in id order: those after `after` in
        its millisecond first, then the later milliseconds."""
        return await oldest_first(self.redis, keys.webhooks(tenant), after, count)

    async def create(self, tenant: str, record: WebhookRecord, limit: int) -> bool:
        """Store a new webhook; False (nothing stored) when the tenant has `limit` webhooks already."""
        created = await self.scripts.webhook_create(
            keys=[keys.webhooks(tenant), keys.webhooks_enabled(tenant), keys.webhook(tenant, record.id)],
            args=[
                record.id,
                record.create_ms,
                resource_of(record),
                record.state,
                _encode(record.secrets),
                limit,
            ],
        )
        return bool(int(created))

    async def write(
        self, tenant: str, seen: WebhookRecord, new: WebhookRecord, *, set_state: bool = False
    ) -> WriteResult:
        """Replace `seen` by `new` (its fields and secrets, and its state with `set_state`) if nobody
        wrote it since it was read. The state is left alone otherwise: the delivery pipeline changes it."""
        state = new.state if set_state else ""
        done = int(
            await self.scripts.webhook_write(
                keys=[keys.webhook(tenant, new.id), keys.webhooks_enabled(tenant)],
                args=[new.id, seen.raw, resource_of(new), state, _encode(new.secrets)],
            )
        )
        return WriteResult(written=done == 1, gone=done == 0)

    async def delete(self, tenant: str, webhook_id: str) -> bool:
        """Remove a webhook, its deliveries and its memberships at once; False if there was none."""
        existed = await self.scripts.webhook_delete(
            keys=[
                keys.webhook(tenant, webhook_id),
                keys.webhook_deliveries(tenant, webhook_id),
                keys.webhooks(tenant),
                keys.webhooks_enabled(tenant),
            ],
            args=[webhook_id],
        )
        return bool(int(existed))
