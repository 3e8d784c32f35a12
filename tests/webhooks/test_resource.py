"""The Webhooks resource (issue 14), driven by the official SDK's `client.webhooks.*` against a server
process of its own (loopback receivers allowed, a known server key, a small per-tenant limit)."""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import httpx
import pytest
import redis
from google import genai
from google.genai._gaos.lib.compat_errors import APIStatusError

from server.store import keys
from server.webhooks import secrets

from ..support import TOPOLOGIES, Stack, new_key, running_stack, sdk, tenant_of

SERVER_KEY = os.urandom(32)
LIMIT = 6
OVERLAP = 86400.0
RECEIVER = "http://127.0.0.1:9/hook"
EVENTS = ["interaction.completed", "interaction.failed"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    config = {"webhooks": {"allow": ["127.0.0.0/8", "localhost"], "max_webhooks": LIMIT}}
    env = {"IX_WEBHOOK_KEYS": base64.b64encode(SERVER_KEY).decode()}
    workdir = tmp_path_factory.mktemp("webhooks")
    with running_stack(workdir, config=config, env=env, topology=TOPOLOGIES["tcp-embedded"]) as started:
        yield started


@pytest.fixture
def api_key() -> str:
    return new_key()


@pytest.fixture
def client(stack: Stack, api_key: str) -> genai.Client:
    return sdk(stack.url, api_key)


@pytest.fixture
def http(stack: Stack, api_key: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=stack.url, headers={"x-goog-api-key": api_key}, timeout=30) as opened:
        yield opened


#: redis-py types each command as "an awaitable or a value" (one class for its sync and asyncio clients)
SyncRedis = Any


@pytest.fixture
def store(stack: Stack) -> Iterator[SyncRedis]:
    opened = redis.Redis.from_url(stack.redis_url)
    try:
        yield opened
    finally:
        opened.close()


def refused(call: Any, status: int, *words: str) -> dict[str, Any]:
    """The error body of a call that must fail with `status`, its message holding every one of `words`."""
    with pytest.raises(APIStatusError) as raised:
        call()
    assert raised.value.status_code == status, raised.value
    error: dict[str, Any] = raised.value.response.json()["error"]
    for word in words:
        assert word in error["message"], error
    return error


def create(client: genai.Client, **fields: Any) -> Any:
    return client.webhooks.create(
        uri=fields.pop("uri", RECEIVER), subscribed_events=fields.pop("events", EVENTS), **fields
    )


def test_create_shows_the_secret_once(client: genai.Client) -> None:
    made = create(client, name="orders")
    assert made.id and made.id.startswith("wh_")
    assert (made.name, made.uri, made.state) == ("orders", RECEIVER, "enabled")
    assert made.subscribed_events == EVENTS
    assert made.create_time and made.update_time
    secret = made.new_signing_secret
    assert secret and secret.startswith("whsec_") and len(base64.b64decode(secret[6:])) == 32
    assert [each.truncated_secret for each in made.signing_secrets] == [secrets.truncated(secret)]
    assert made.signing_secrets[0].expire_time is None
    assert secret[6:-4] not in made.signing_secrets[0].truncated_secret
    got = client.webhooks.get(made.id)
    assert got.new_signing_secret is None
    assert got.signing_secrets == made.signing_secrets
    listed = client.webhooks.list()
    assert [each.id for each in listed.webhooks or []] == [made.id]
    assert all(each.new_signing_secret is None for each in listed.webhooks or [])


def test_list_pages_oldest_first(client: genai.Client, http: httpx.Client) -> None:
    made = [str(create(client, name=f"n{index}").id) for index in range(5)]
    seen: list[str] = []
    token: str | None = None
    for _ in range(5):
        page = client.webhooks.list(page_size=2, page_token=token)
        seen += [str(each.id) for each in page.webhooks or []]
        token = page.next_page_token
        if token is None:
            break
    assert seen == made
    assert [each.id for each in client.webhooks.list().webhooks or []] == made
    for bad in ("-1", "two"):
        error = http.get("/v1beta/webhooks", params={"page_size": bad}).json()["error"]
        assert error["code"] == 400 and "`page_size`" in error["message"]
    error = http.get("/v1beta/webhooks", params={"page_token": "nonsense"}).json()["error"]
    assert error["code"] == 400 and "`page_token`" in error["message"]


def test_update_changes_only_the_masked_fields(client: genai.Client) -> None:
    made = create(client, name="first")
    renamed = client.webhooks.update(made.id, update_mask="name", name="second", uri="http://127.0.0.1:10/x")
    assert (renamed.name, renamed.uri) == ("second", RECEIVER)
    moved = client.webhooks.update(made.id, update_mask="uri", uri="http://localhost:8081/moved")
    assert (moved.name, moved.uri) == ("second", "http://localhost:8081/moved")
    events = client.webhooks.update(
        made.id, update_mask="subscribed_events", subscribed_events=["interaction.requires_action"]
    )
    assert events.subscribed_events == ["interaction.requires_action"] and events.uri == moved.uri
    disabled = client.webhooks.update(made.id, update_mask="state", state="disabled")
    assert disabled.state == "disabled" and disabled.subscribed_events == events.subscribed_events
    # without a mask, the fields the body holds
    both = client.webhooks.update(made.id, name="third", state="enabled")
    assert (both.name, both.state, both.uri) == ("third", "enabled", moved.uri)
    assert both.signing_secrets == made.signing_secrets
    refused(
        lambda: client.webhooks.update(made.id, update_mask="name,colour", name="x"),
        400,
        "`update_mask`",
        "colour",
    )
    refused(
        lambda: client.webhooks.update(made.id, update_mask="subscribed_events"), 400, "`subscribed_events`"
    )
    assert client.webhooks.get(made.id).name == "third"


def test_the_enabled_set_follows_the_state(client: genai.Client, api_key: str, store: SyncRedis) -> None:
    tenant = tenant_of(api_key)
    enabled = keys.webhooks_enabled(tenant)
    first, second = create(client).id, create(client).id
    assert store.smembers(enabled) == {first.encode(), second.encode()}
    client.webhooks.update(first, update_mask="state", state="disabled")
    assert store.smembers(enabled) == {second.encode()}
    # as the delivery pipeline leaves one after too many failures
    hook = keys.webhook(tenant, second)
    store.hset(
        hook,
        mapping={keys.WebhookField.STATE: "disabled_due_to_failed_deliveries", keys.WebhookField.FAILS: 5},
    )
    store.srem(enabled, second)
    assert client.webhooks.get(second).state == "disabled_due_to_failed_deliveries"
    refused(
        lambda: client.webhooks.update(
            second, update_mask="state", state="disabled_due_to_failed_deliveries"
        ),
        400,
        "`state`",
    )
    assert client.webhooks.update(second, update_mask="state", state="enabled").state == "enabled"
    assert store.smembers(enabled) == {second.encode()}
    assert store.hget(hook, keys.WebhookField.FAILS) == b"0"
    client.webhooks.delete(second)
    assert store.smembers(enabled) == set()


def test_delete_removes_everything(client: genai.Client, api_key: str, store: SyncRedis) -> None:
    tenant = tenant_of(api_key)
    made = create(client).id
    store.lpush(keys.webhook_deliveries(tenant, made), b'{"status_code": 200}')
    client.webhooks.delete(made)
    refused(lambda: client.webhooks.get(made), 404, made)
    refused(lambda: client.webhooks.delete(made), 404)
    assert list(store.scan_iter(match=f"ix:{{{tenant}}}:webhook*")) == []


def test_rotation_keeps_the_previous_secret_for_the_overlap(
    client: genai.Client, http: httpx.Client, api_key: str, store: SyncRedis
) -> None:
    made = create(client)
    rotated = client.webhooks.rotate_signing_secret(made.id).secret
    assert rotated and rotated.startswith("whsec_") and rotated != made.new_signing_secret
    shown = client.webhooks.get(made.id).signing_secrets or []
    assert [each.truncated_secret for each in shown] == [
        secrets.truncated(rotated),
        secrets.truncated(made.new_signing_secret),
    ]
    assert shown[0].expire_time is None and shown[1].expire_time is not None
    assert abs(shown[1].expire_time.timestamp() - (time.time() + OVERLAP)) < 60
    # sealed with the server key, for this webhook: opened with both, they are the secrets shown once
    stored = store.hget(keys.webhook(tenant_of(api_key), made.id), keys.WebhookField.SECRETS)
    assert stored is not None
    context = secrets.secret_context(tenant_of(api_key), made.id)
    opened = [
        secrets.unseal(each["sealed"], SERVER_KEY, context=context).decode() for each in json.loads(stored)
    ]
    assert opened == [rotated, made.new_signing_secret]
    again = client.webhooks.rotate_signing_secret(
        made.id, revocation_behavior="revoke_previous_secrets_immediately"
    )
    assert again.secret
    assert [each.truncated_secret for each in client.webhooks.get(made.id).signing_secrets or []] == [
        secrets.truncated(again.secret)
    ]
    # the SDK checks the value itself: sent as another client would
    bad = http.post(f"/v1beta/webhooks/{made.id}:rotateSigningSecret", json={"revocation_behavior": "never"})
    assert bad.status_code == 400 and "`revocation_behavior`" in bad.json()["error"]["message"]


@pytest.mark.parametrize(
    ("uri", "why"),
    [
        ("http://[::1]:8080/hook", "loopback"),
        ("http://169.254.169.254/latest/meta-data/", "metadata"),
        ("http://10.1.2.3/hook", "private"),
        ("ftp://127.0.0.1/hook", ""),
        ("not a uri", ""),
    ],
)
def test_refused_uris(client: genai.Client, uri: str, why: str) -> None:
    refused(lambda: create(client, uri=uri), 400, "`uri`", why)
    made = create(client)
    refused(lambda: client.webhooks.update(made.id, update_mask="uri", uri=uri), 400, "`uri`", why)
    assert client.webhooks.get(made.id).uri == RECEIVER


def test_events_are_checked(client: genai.Client) -> None:
    refused(lambda: create(client, events=[]), 400, "`subscribed_events`")
    refused(
        lambda: create(client, events=["interaction.completed", "batch.succeeded"]),
        400,
        "`subscribed_events[1]`",
        "no batches",
    )
    refused(lambda: create(client, events=["video.generated"]), 400, "no video generation")
    refused(
        lambda: create(client, events=["interaction.exploded"]),
        400,
        "`subscribed_events[0]`",
        "unknown event",
    )
    made = create(
        client, events=["interaction.cancelled", "interaction.cancelled", "interaction.requires_action"]
    )
    assert made.subscribed_events == ["interaction.cancelled", "interaction.requires_action"]
    assert client.webhooks.list().webhooks and len(client.webhooks.list().webhooks or []) == 1


def test_openais_response_events_may_be_subscribed_beside_googles(client: genai.Client) -> None:
    """Issue 26: the four `response.*` events, on create and update, with or without `interaction.*`;
    one OpenAI does not send is refused by its place."""
    both = ["interaction.completed", "response.completed", "response.incomplete"]
    made = create(client, events=both)
    assert made.subscribed_events == both
    only = ["response.failed", "response.cancelled"]
    updated = client.webhooks.update(
        made.id, update_mask="subscribed_events", subscribed_events=cast(Any, only)
    )
    assert updated.subscribed_events == only and client.webhooks.get(made.id).subscribed_events == only
    refused(
        lambda: create(client, events=["response.completed", "response.foo"]),
        400,
        "`subscribed_events[1]`",
        "unknown event 'response.foo'",
        "response.incomplete",
    )
    refused(
        lambda: client.webhooks.update(made.id, subscribed_events=cast(Any, ["response.created"])),
        400,
        "`subscribed_events[0]`",
    )
    assert client.webhooks.get(made.id).subscribed_events == only


def test_the_per_tenant_limit_holds_under_concurrent_creates(client: genai.Client) -> None:
    def attempt(_: int) -> int:
        try:
            create(client)
        except APIStatusError as exc:
            return int(exc.status_code or 0)
        return 200

    with ThreadPoolExecutor(max_workers=LIMIT + 4) as pool:
        codes = list(pool.map(attempt, range(LIMIT + 4)))
    assert sorted(codes) == [200] * LIMIT + [429] * 4
    error = refused(lambda: create(client), 429, "max_webhooks")
    assert error["status"] == "RESOURCE_EXHAUSTED"
    first = (client.webhooks.list().webhooks or [])[0].id
    assert first
    client.webhooks.delete(first)
    assert create(client).id


def test_tenants_see_only_their_own(client: genai.Client, stack: Stack) -> None:
    made = create(client).id
    other = sdk(stack.url, new_key())
    assert not other.webhooks.list().webhooks
    refused(lambda: other.webhooks.get(made), 404)
    refused(lambda: other.webhooks.update(made, name="mine now"), 404)
    refused(lambda: other.webhooks.rotate_signing_secret(made), 404)
    refused(lambda: other.webhooks.ping(made), 404)
    refused(lambda: other.webhooks.delete(made), 404)
    assert client.webhooks.get(made).id == made


def test_no_secret_in_plain_text_in_redis(client: genai.Client, api_key: str, store: SyncRedis) -> None:
    made = create(client)
    rotated = client.webhooks.rotate_signing_secret(made.id).secret
    plain = [made.new_signing_secret, rotated]
    tenant = tenant_of(api_key)
    dumped = b""
    for key in store.scan_iter(match=f"ix:{{{tenant}}}:*"):
        kind = store.type(key)
        if kind == b"hash":
            dumped += b"".join(k + v for k, v in store.hgetall(key).items())
        elif kind == b"string":
            dumped += store.get(key) or b""
        else:
            dumped += store.dump(key) or b""
    assert dumped
    for secret in plain:
        assert secret and secret.encode() not in dumped
        assert secret[6:].encode() not in dumped
        assert base64.b64decode(secret[6:]) not in dumped


def test_ping_answers_empty_for_a_webhook_of_the_tenant(client: genai.Client, http: httpx.Client) -> None:
    made = create(client).id
    client.webhooks.ping(made)
    assert http.post(f"/v1beta/webhooks/{made}:ping").json() == {}
    assert http.post(f"/v1beta/webhooks/{made}:frobnicate").status_code == 404
    refused(lambda: client.webhooks.ping("wh_" + "A" * 22), 404)


def test_the_vertex_paths_and_malformed_ids(http: httpx.Client) -> None:
    base = "/v1beta1/projects/p/locations/us-central1/webhooks"
    made = http.post(base, json={"uri": RECEIVER, "subscribed_events": EVENTS}).json()
    assert http.get(f"{base}/{made['id']}").json()["id"] == made["id"]
    assert http.get(f"/v1/webhooks/{made['id']}").json()["uri"] == RECEIVER
    missing = http.get("/v1beta/webhooks/not-an-id")
    assert missing.status_code == 404 and "not-an-id" in missing.json()["error"]["message"]
    unknown = http.post(
        "/v1beta/webhooks", json={"uri": RECEIVER, "subscribed_events": EVENTS, "colour": "red"}
    )
    assert unknown.status_code == 400 and "colour" in unknown.json()["error"]["message"]
    assert http.post("/v1beta/webhooks", content=b"{").status_code == 400
    # `{id}` and `{id}:verb` are different paths: each answers only its own methods
    assert http.get(f"/v1beta/webhooks/{made['id']}:ping").status_code == 405
    assert http.post(f"/v1beta/webhooks/{made['id']}").headers["allow"] == "DELETE, GET, OPTIONS, PATCH"
    assert http.options(f"/v1beta/webhooks/{made['id']}:ping").headers["allow"] == "OPTIONS, POST"
    assert http.options("/v1beta/webhooks").headers["allow"] == "GET, OPTIONS, POST"


def test_deliveries_extension(http: httpx.Client, api_key: str, store: SyncRedis) -> None:
    made = http.post("/v1beta/webhooks", json={"uri": RECEIVER, "subscribed_events": EVENTS}).json()["id"]
    assert http.get(f"/v1beta/webhooks/{made}/deliveries").json() == {"deliveries": []}
    entries = [{"n": index, "status_code": 500 + index} for index in range(3)]
    listed = keys.webhook_deliveries(tenant_of(api_key), made)
    for entry in entries:
        store.lpush(listed, httpx.Response(200, json=entry).content)
    got = http.get(f"/v1beta/webhooks/{made}/deliveries", params={"page_size": 2}).json()
    assert got == {"deliveries": [entries[2], entries[1]]}
    assert http.get("/v1beta/webhooks/wh_AAAAAAAAAAAAAAAAAAAAAA/deliveries").status_code == 404


def test_jwks_needs_no_key_and_holds_an_rs256_key(stack: Stack) -> None:
    answer = httpx.get(f"{stack.url}/.well-known/jwks.json")
    assert answer.status_code == 200
    assert answer.headers["cache-control"] == "public, max-age=300"
    found = answer.json()["keys"]
    assert found and found[0]["kty"] == "RSA" and found[0]["alg"] == "RS256" and found[0]["kid"]
    assert httpx.get(f"{stack.url}/.well-known/jwks.json").json()["keys"][0]["kid"] == found[0]["kid"]
