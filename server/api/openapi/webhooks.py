"""The Webhooks resource's paths and schemas (api/webhooks.py), on Google's and Vertex's prefixes, and
the JWKS of webhook_config deliveries."""

from __future__ import annotations

import msgspec

from ...webhooks import rules
from ...webhooks.wire import (
    CreateWebhook,
    RotatedSecret,
    RotateSigningSecret,
    UpdateWebhook,
    Webhook,
    WebhookList,
)
from .common import Json, ref
from .parameters import errors
from .resources import prefixed, query, reply

TAG = "Webhooks"
TAG_VERTEX = "Webhooks (Vertex paths)"
_NOT_FOUND = "No such webhook for this API key (or a malformed id), or an unknown API version"
_ID: Json = {
    "name": "id",
    "in": "path",
    "required": True,
    "description": "Webhook id (`wh_` and 22 characters; anything else names no webhook: 404)",
    "schema": {"type": "string", "pattern": "^wh_[A-Za-z0-9_-]{22}$"},
}
_EMPTY: Json = {"type": "object", "maxProperties": 0}
_JWKS: Json = {
    "type": "object",
    "required": ["keys"],
    "properties": {"keys": {"type": "array", "items": {"type": "object"}}},
}


def _body(schema: Json, required: bool = True) -> Json:
    return {"required": required, "content": {"application/json": {"schema": schema}}}


def _op(name: str, summary: str, reply: Json, *, responses: Json, **extra: Json | list[Json]) -> Json:
    """An operation: its 200 `reply`, its error `responses`, and `extra` (parameters, requestBody)."""
    return {"operationId": name, "summary": summary, "responses": {"200": reply, **responses}, **extra}


def _operations() -> dict[str, Json]:
    """Each operation without its operationId suffix and tag (added per prefix)."""
    return {**_collection_operations(), **_item_operations()}


def _collection_operations() -> dict[str, Json]:
    page_size = query(
        "page_size", "At most this many (50 by default; more than 1000 is read as 1000)", "integer"
    )
    return {
        "create": _op(
            "CreateWebhook",
            "Create a webhook; its signing secret is shown in this reply only",
            reply("The webhook, with `new_signing_secret`", ref("Webhook")),
            requestBody=_body(ref("CreateWebhook")),
            responses=errors(
                e400="Invalid request: the message names the field (a refused `uri`, unknown "
                "`subscribed_events`)",
                e404="An unknown API version",
                e429="This API key has `webhooks.max_webhooks` webhooks (`RESOURCE_EXHAUSTED`)",
            ),
        ),
        "list": _op(
            "ListWebhooks",
            "List the webhooks of this API key, oldest first",
            reply("A page of webhooks; `next_page_token` when there are more", ref("WebhookList")),
            parameters=[page_size, query("page_token", "`next_page_token` of the previous page")],
            responses=errors(e400="A bad `page_size` or `page_token`", e404="An unknown API version"),
        ),
    }


def _item_operations() -> dict[str, Json]:
    return {
        "get": _op(
            "GetWebhook",
            "Get a webhook",
            reply("The webhook", ref("Webhook")),
            responses=errors(e404=_NOT_FOUND),
        ),
        "update": _op(
            "UpdateWebhook",
            "Update a webhook's name, uri, subscribed_events or state",
            reply("The webhook as updated", ref("Webhook")),
            requestBody=_body(ref("UpdateWebhook")),
            parameters=[
                query(
                    "update_mask",
                    "Comma-separated: some of name, uri, subscribed_events, state "
                    "(without it, the fields the body holds)",
                )
            ],
            responses=errors(
                e400="Invalid request: the message names the field or the mask path", e404=_NOT_FOUND
            ),
        ),
        "delete": _op(
            "DeleteWebhook", "Delete a webhook", reply("Deleted", _EMPTY), responses=errors(e404=_NOT_FOUND)
        ),
        "ping": _op(
            "PingWebhook",
            "Queue a signed test delivery to the webhook",
            reply("Queued", _EMPTY),
            requestBody=_body(_EMPTY, required=False),
            responses=errors(e400="A body that is not a JSON object", e404=_NOT_FOUND),
        ),
        "rotate": _op(
            "RotateSigningSecret",
            "Make a new signing secret (shown in this reply only)",
            reply("The new secret", ref("RotatedSecret")),
            requestBody=_body(ref("RotateSigningSecret"), False),
            responses=errors(e400="An unknown `revocation_behavior`", e404=_NOT_FOUND),
        ),
        "deliveries": _op(
            "ListWebhookDeliveries",
            "This server's extension (Google has none): the webhook's last delivery attempts, newest first",
            reply("The attempts", _DELIVERIES),
            parameters=[
                query("page_size", "At most this many (`webhooks.deliveries_kept` are kept)", "integer")
            ],
            responses=errors(e400="A bad `page_size`", e404=_NOT_FOUND),
        ),
    }


_DELIVERIES: Json = {
    "type": "object",
    "required": ["deliveries"],
    "properties": {
        "deliveries": {
            "type": "array",
            "items": {"type": "object", "description": "One attempt: time, status code, latency, error"},
        }
    },
}


def webhook_paths() -> Json:
    """Every prefix's webhook paths, and /.well-known/jwks.json."""
    paths: Json = {}
    for prefix, base, ops in prefixed(_operations, (TAG, TAG_VERTEX)):
        item = [*base, _ID]
        paths[f"{prefix}/webhooks"] = {"parameters": base, "post": ops["create"], "get": ops["list"]}
        paths[f"{prefix}/webhooks/{{id}}"] = {
            "parameters": item,
            "get": ops["get"],
            "patch": ops["update"],
            "delete": ops["delete"],
        }
        paths[f"{prefix}/webhooks/{{id}}:ping"] = {"parameters": item, "post": ops["ping"]}
        paths[f"{prefix}/webhooks/{{id}}:rotateSigningSecret"] = {"parameters": item, "post": ops["rotate"]}
        paths[f"{prefix}/webhooks/{{id}}/deliveries"] = {"parameters": item, "get": ops["deliveries"]}
    paths["/.well-known/jwks.json"] = {"get": _jwks()}
    return paths


def _jwks() -> Json:
    return {
        "operationId": "jwks",
        "summary": "The public keys that sign webhook_config deliveries (RS256 JWTs), as a JWKS",
        "tags": ["Service"],
        "security": [],
        "responses": {
            "200": {
                **reply(
                    "The JWKS: the current key first, then replaced ones still within their overlap", _JWKS
                ),
                "headers": {
                    "Cache-Control": {"description": "public, max-age=300", "schema": {"type": "string"}}
                },
            }
        },
    }


def webhook_schemas() -> Json:
    _, components = msgspec.json.schema_components(
        [Webhook, WebhookList, CreateWebhook, UpdateWebhook, RotateSigningSecret, RotatedSecret],
        ref_template="#/components/schemas/{name}",
    )
    events = {"type": "string", "enum": list(rules.EVENTS)}
    # the addresses its host resolves to are checked too, which no schema can say
    uri = {"type": "string", "format": "uri", "pattern": "^https?://", "maxLength": 2048}
    components["CreateWebhook"]["properties"]["uri"] = uri
    for name in ("CreateWebhook", "Webhook"):
        components[name]["properties"]["subscribed_events"] = {
            "type": "array",
            "items": events,
            "minItems": 1,
        }
    components["Webhook"]["properties"]["state"] = {
        "type": "string",
        "enum": [*rules.USER_STATES, "disabled_due_to_failed_deliveries"],
    }
    revocation = {"anyOf": [{"type": "string", "enum": list(rules.REVOCATIONS)}, {"type": "null"}]}
    components["RotateSigningSecret"]["properties"]["revocation_behavior"] = revocation
    return components
