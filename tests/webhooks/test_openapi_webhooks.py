"""The Webhooks resource in the OpenAPI document: every route the handlers serve, valid, and replies that
match their schemas (issue 14)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs in the environment
import msgspec
from openapi_spec_validator import validate

from server.api.openapi import build
from server.store.webhooks import StoredSecret, WebhookRecord
from server.webhooks.wire import view

VERTEX = "/{version}/projects/{project}/locations/{location}"


def _document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(build())
    return document


def test_every_webhook_route_is_described() -> None:
    document = _document()
    validate(document)
    paths = document["paths"]
    for prefix, suffix in (("/{version}", ""), (VERTEX, "Vertex")):
        expected = {
            ("/webhooks", "post"): "CreateWebhook",
            ("/webhooks", "get"): "ListWebhooks",
            ("/webhooks/{id}", "get"): "GetWebhook",
            ("/webhooks/{id}", "patch"): "UpdateWebhook",
            ("/webhooks/{id}", "delete"): "DeleteWebhook",
            ("/webhooks/{id}:ping", "post"): "PingWebhook",
            ("/webhooks/{id}:rotateSigningSecret", "post"): "RotateSigningSecret",
            ("/webhooks/{id}/deliveries", "get"): "ListWebhookDeliveries",
        }
        for (path, method), name in expected.items():
            assert paths[prefix + path][method]["operationId"] == name + suffix
    jwks = paths["/.well-known/jwks.json"]["get"]
    assert jwks["security"] == [] and "Cache-Control" in jwks["responses"]["200"]["headers"]
    events = document["components"]["schemas"]["CreateWebhook"]["properties"]["subscribed_events"]
    assert {"interaction.completed", "response.completed", "response.incomplete"} <= set(
        events["items"]["enum"]
    )
    create = paths["/{version}/webhooks"]["post"]["responses"]
    assert create["429"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorBody"
    }


def test_a_webhook_as_answered_matches_its_schema() -> None:
    document = _document()
    record = WebhookRecord(
        "wh_" + "A" * 22, "n", "https://example.com/h", ["interaction.completed"], "enabled",
        [StoredSecret("ixs1.x.y", "whsec_…abcd"), StoredSecret("ixs1.x.z", "whsec_…efgh", 2_000_000_000_000)],
        1_700_000_000_000, 1_700_000_000_000,
    )  # fmt: skip
    answered = msgspec.json.decode(msgspec.json.encode(view(record, 1_700_000_000_000, "whsec_secret")))
    schema = {"$ref": "#/components/schemas/Webhook", "components": document["components"]}
    jsonschema.validate(answered, schema)
    assert [each["truncated_secret"] for each in answered["signing_secrets"]] == [
        "whsec_…abcd",
        "whsec_…efgh",
    ]
