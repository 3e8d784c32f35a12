"""The Webhooks resource on the wire (Google's shapes, as the SDK's `_gaos/types/webhooks` parse them),
and a stored webhook as the API shows it: never a secret, only its truncated form and expiry."""

from __future__ import annotations

import time

import msgspec
from msgspec import UNSET, UnsetType

from ..store.webhooks import WebhookRecord


class SigningSecret(msgspec.Struct, kw_only=True, omit_defaults=True):
    truncated_secret: str
    #: when it stops signing; absent for the current secret
    expire_time: str | None = None


class Webhook(msgspec.Struct, kw_only=True, omit_defaults=True):
    id: str
    #: the user-provided name (the SDK's `name`: "Optional. The user-provided name of the webhook")
    name: str | None = None
    uri: str
    subscribed_events: list[str]
    state: str
    create_time: str
    update_time: str
    signing_secrets: list[SigningSecret] = []
    #: the plain secret, on create only
    new_signing_secret: str | None = None


class WebhookList(msgspec.Struct, kw_only=True, omit_defaults=True):
    webhooks: list[Webhook] = []
    next_page_token: str | None = None


class RotatedSecret(msgspec.Struct, kw_only=True):
    secret: str


class CreateWebhook(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    uri: str
    subscribed_events: list[str]
    name: str | None = None


class UpdateWebhook(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The fields to change: those `update_mask` names (one it names and the body lacks is cleared, or
    refused where required), or without a mask, those present."""

    name: str | UnsetType | None = UNSET
    uri: str | UnsetType | None = UNSET
    subscribed_events: list[str] | UnsetType | None = UNSET
    state: str | UnsetType | None = UNSET


class RotateSigningSecret(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    revocation_behavior: str | None = None


class Deliveries(msgspec.Struct, kw_only=True):
    """This server's extension: a webhook's last delivery attempts, newest first, as written."""

    deliveries: list[msgspec.Raw]


def rfc3339(ms: int) -> str:
    """A time as the API writes them (`2026-06-01T12:00:00Z`, like an interaction's `created`)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms // 1000))


def view(record: WebhookRecord, now_ms: int, new_secret: str | None = None) -> Webhook:
    return Webhook(
        id=record.id,
        name=record.name,
        uri=record.uri,
        subscribed_events=list(record.subscribed_events),
        state=record.state,
        create_time=rfc3339(record.create_ms),
        update_time=rfc3339(record.update_ms),
        signing_secrets=[
            SigningSecret(
                truncated_secret=each.truncated,
                expire_time=None if each.expire_ms is None else rfc3339(each.expire_ms),
            )
            for each in record.valid_secrets(now_ms)
        ],
        new_signing_secret=new_secret,
    )
