"""Tenancy and retention: API keys and tenants, isolation between tenants, TTLs, delete, the probes, the
OpenAPI document, the Vertex path segment, and the configured "keys" auth mode (its own server)."""

# The server runs on its own loop in another thread (tests/inproc.py: ThreadedApp): a blocking httpx call
# inside an async test (async only to use the `redis` fixture) blocks nothing that matters.
# ruff: noqa: ASYNC210, ASYNC212

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol, cast

import httpx
import pytest
import redis.asyncio as aioredis
from google import genai
from google.genai import _interactions as sdk_errors
from redis import Redis as SyncRedis

from server.store import keys

from .inproc import ThreadedApp, threaded
from .replies import id_of, interaction
from .support import is_usage_key, new_key, sdk, tenant_keys, tenant_of

PATH = "/v1beta/interactions"
TTL_MS = 55 * 24 * 3600 * 1000
#: slack for the time between the write and the PTTL read
TTL_SLACK_MS = 60_000


def assert_error(response: httpx.Response, status: int, *fragments: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == status
    assert isinstance(error["message"], str) and isinstance(error["status"], str)
    for fragment in fragments:
        assert fragment in error["message"], (fragment, error["message"])


def create(http: httpx.Client, text: str = "hello", **fields: Any) -> dict[str, Any]:
    response = http.post(PATH, json={"model": "echo", "input": text, **fields})
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply


def wait_finished(http: httpx.Client, interaction_id: str, timeout: float = 10) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        got: dict[str, Any] = http.get(f"{PATH}/{interaction_id}", params={"stream": "false"}).json()
        if got["status"] != "in_progress":
            return got
        assert time.monotonic() < deadline, got
        time.sleep(0.02)


@pytest.fixture
def other(base_url: str) -> Iterator[httpx.Client]:
    """A client of another tenant."""
    with httpx.Client(base_url=base_url, headers={"x-goog-api-key": new_key()}, timeout=30) as client:
        yield client


@pytest.fixture
def anonymous(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=30) as client:
        yield client


# ---------------------------------------------------------------------------------------------------------
# keys


def test_no_key_is_401(anonymous: httpx.Client, http: httpx.Client) -> None:
    existing = create(http)["id"]
    assert_error(anonymous.post(PATH, json={"model": "echo", "input": "hi"}), 401)
    assert_error(anonymous.get(f"{PATH}/{existing}", params={"stream": "false"}), 401)
    assert_error(anonymous.post(f"{PATH}/{existing}/cancel"), 401)
    assert_error(anonymous.delete(f"{PATH}/{existing}"), 401)
    response = anonymous.post(PATH, json={"model": "echo", "input": "hi"})
    assert response.json()["error"]["status"] == "UNAUTHENTICATED"
    # still there for its owner
    assert http.get(f"{PATH}/{existing}").status_code == 200


@pytest.mark.parametrize(
    ("headers", "params"),
    [
        ({"x-goog-api-key": ""}, {}),
        ({}, {"key": "   "}),
        ({}, {"key": ""}),
        ({"authorization": "Bearer"}, {}),
        ({"authorization": "Bearer"}, {"key": ""}),
        ({"authorization": "Basic dXNlcjpwYXNz"}, {}),
        ({"authorization": "some-key"}, {}),
    ],
)
def test_empty_or_unusable_key_is_401(
    anonymous: httpx.Client, headers: dict[str, str], params: dict[str, str]
) -> None:
    assert_error(
        anonymous.post(PATH, json={"model": "echo", "input": "hi"}, headers=headers, params=params), 401
    )


async def test_the_three_ways_to_send_a_key_map_to_one_tenant(
    base_url: str, api_key: str, tenant: str, redis: aioredis.Redis
) -> None:
    ways: list[dict[str, Any]] = [
        {"headers": {"x-goog-api-key": api_key}},
        {"params": {"key": api_key}},
        {"headers": {"authorization": f"Bearer {api_key}"}},
    ]
    ids = []
    with httpx.Client(base_url=base_url, timeout=30) as anonymous:
        for way in ways:
            response = anonymous.post(PATH, json={"model": "echo", "input": "hi"}, **way)
            assert response.status_code == 200, response.text
            ids.append(response.json()["id"])
        # each id is readable with each way of sending the key
        for interaction_id in ids:
            for way in ways:
                params = {"stream": "false", **way.get("params", {})}
                got = anonymous.get(f"{PATH}/{interaction_id}", headers=way.get("headers"), params=params)
                assert got.status_code == 200, (way, got.text)
    stored = {key.decode().rsplit(":", 1)[-1] for key in await tenant_keys(redis, tenant)}
    assert set(ids) <= stored


def test_sdk_key_is_the_same_tenant_as_the_header(client: genai.Client, http: httpx.Client) -> None:
    made = id_of(interaction(client.interactions.create(model="echo", input="from the sdk")))
    assert http.get(f"{PATH}/{made}").json()["id"] == made


def test_x_goog_api_key_wins_over_authorization(base_url: str, api_key: str, http: httpx.Client) -> None:
    # the SDK sends a user's Authorization header in addition to x-goog-api-key (spec §1)
    headers = {"x-goog-api-key": api_key, "authorization": f"Bearer {new_key()}"}
    response = httpx.post(f"{base_url}{PATH}", json={"model": "echo", "input": "hi"}, headers=headers)
    assert response.status_code == 200
    assert http.get(f"{PATH}/{response.json()['id']}").status_code == 200


class Reads(Protocol):
    """The reads of `dump`, typed as the asyncio client answers them (redis-py types each command as "an
    awaitable or a value", for its sync and asyncio clients at once)."""

    async def type(self, name: bytes) -> bytes: ...
    async def get(self, name: bytes) -> bytes | None: ...
    async def hgetall(self, name: bytes) -> dict[bytes, bytes]: ...
    async def lrange(self, name: bytes, start: int, end: int) -> list[bytes]: ...
    async def smembers(self, name: bytes) -> set[bytes]: ...
    async def zrange(self, name: bytes, start: int, end: int) -> list[bytes]: ...
    async def xrange(self, name: bytes) -> list[tuple[bytes, dict[bytes, bytes]]]: ...


async def dump(client: aioredis.Redis, key: bytes) -> bytes:
    """Every byte stored under a key, whatever its type."""
    redis = cast(Reads, client)
    kind = (await redis.type(key)).decode()
    parts: list[Any]
    if kind == "string":
        parts = [await redis.get(key)]
    elif kind == "hash":
        fields = await redis.hgetall(key)
        parts = [*fields.keys(), *fields.values()]
    elif kind == "list":
        parts = await redis.lrange(key, 0, -1)
    elif kind == "set":
        parts = list(await redis.smembers(key))
    elif kind == "zset":
        parts = await redis.zrange(key, 0, -1)
    elif kind == "stream":
        parts = [repr(entry).encode() for entry in await redis.xrange(key)]
    else:
        parts = []
    return b"\n".join(p for p in parts if isinstance(p, bytes))


async def test_the_raw_key_is_never_stored(
    base_url: str, api_key: str, tenant: str, http: httpx.Client, redis: aioredis.Redis
) -> None:
    first = create(http, "a chain head")
    create(http, "a follow up", previous_interaction_id=first["id"])
    with http.stream("POST", PATH, json={"model": "echo", "input": "streamed", "stream": True}) as response:
        assert response.status_code == 200
        response.read()
    background = create(http, "in the background", background=True)
    wait_finished(http, background["id"])
    http.post(PATH, json={"model": "echo", "input": "idempotent"}, headers={"idempotency-key": "idem-1"})
    httpx.post(f"{base_url}{PATH}", params={"key": api_key}, json={"model": "echo", "input": "by query"})
    keys = await tenant_keys(redis, tenant)
    assert len(keys) >= 5
    secret = api_key.encode()
    for key in keys:
        assert secret not in key
        assert secret not in await dump(redis, key), key
    # nor anywhere else in Redis (the running set, the job queue, ...)
    async for key in redis.scan_iter(count=1000):
        assert secret not in key
        assert secret not in await dump(redis, key), key


# ---------------------------------------------------------------------------------------------------------
# isolation


async def test_another_tenants_id_is_404(
    http: httpx.Client, other: httpx.Client, redis: aioredis.Redis, tenant: str
) -> None:
    mine = create(http, "private words")
    item = f"{PATH}/{mine['id']}"
    before = http.get(item, params={"include_input": "true"}).json()
    theirs = tenant_of(str(other.headers["x-goog-api-key"]))

    assert_error(other.get(item, params={"stream": "false"}), 404, mine["id"])
    assert_error(other.get(item, params={"stream": "true"}), 404, mine["id"])
    assert_error(other.post(f"{item}/cancel"), 404, mine["id"])
    assert_error(other.delete(item), 404, mine["id"])
    follow = {"model": "echo", "input": "continue", "previous_interaction_id": mine["id"]}
    assert_error(other.post(PATH, json=follow), 404, mine["id"])
    assert_error(other.post(PATH, json={**follow, "background": True}), 404, mine["id"])
    assert await tenant_keys(redis, theirs) == []

    # the owner still sees it intact
    assert http.get(item, params={"include_input": "true"}).json() == before
    # one record (beside it, the search indexes it is in)
    assert len(records(await tenant_keys(redis, tenant))) == 1


def test_another_tenant_cannot_cancel_or_delete_a_running_interaction(
    http: httpx.Client, other: httpx.Client
) -> None:
    words = " ".join(f"w{i}" for i in range(8))
    running = create(http, words, model="echo-slow", background=True)
    item = f"{PATH}/{running['id']}"
    assert_error(other.post(f"{item}/cancel"), 404)
    assert_error(other.delete(item), 404)
    finished = wait_finished(http, running["id"])
    assert finished["status"] == "completed"
    assert finished["steps"][-1]["content"][0]["text"] == words


def test_another_tenant_with_the_sdk(base_url: str, client: genai.Client) -> None:
    mine = id_of(interaction(client.interactions.create(model="echo", input="hello")))
    stranger = sdk(base_url, new_key())
    with pytest.raises(sdk_errors.NotFoundError):
        stranger.interactions.get(mine)
    with pytest.raises(sdk_errors.NotFoundError):
        stranger.interactions.delete(mine)
    with pytest.raises(sdk_errors.NotFoundError):
        stranger.interactions.create(model="echo", input="x", previous_interaction_id=mine)
    assert client.interactions.get(mine).output_text == "hello"


# ---------------------------------------------------------------------------------------------------------
# retention


async def test_every_interaction_key_has_the_configured_ttl(
    http: httpx.Client, redis: aioredis.Redis, tenant: str
) -> None:
    head = create(http, "one")
    create(http, "two", previous_interaction_id=head["id"])
    with http.stream("POST", PATH, json={"model": "echo", "input": "three", "stream": True}) as response:
        response.read()
    background = create(http, "four", background=True)
    wait_finished(http, background["id"])
    keys = await tenant_keys(redis, tenant)
    interaction_keys = records([k for k in keys if await redis.type(k) == b"hash"])
    assert len(interaction_keys) == 4
    for key in interaction_keys:
        pttl = await redis.pttl(key)
        # a parent lives up to half a TTL longer than its child, so the chain outlives its newest turn
        limit = TTL_MS * 3 // 2 if key.endswith(head["id"].encode()) else TTL_MS
        assert TTL_MS - TTL_SLACK_MS <= pttl <= limit, (key, pttl)
    for key in keys:
        assert await redis.pttl(key) > 0, key  # nothing of a tenant is kept forever


async def test_a_child_extends_its_ancestors(http: httpx.Client, redis: aioredis.Redis, tenant: str) -> None:
    head = create(http, "one")
    middle = create(http, "two", previous_interaction_id=head["id"])
    unrelated = create(http, "elsewhere")
    prefix = f"ix:{{{tenant}}}:"
    for made in (head, middle, unrelated):
        assert await redis.pexpire(prefix + made["id"], 60_000)
    assert await redis.pttl(prefix + head["id"]) <= 60_000

    create(http, "three", previous_interaction_id=middle["id"])
    # the parent is extended at every turn, beyond the new turn's own TTL; older ancestors are extended
    # when their earliest expiry comes near (test_a_live_chain_never_loses_its_head watches that happen)
    pttl = await redis.pttl(prefix + middle["id"])
    assert TTL_MS - TTL_SLACK_MS <= pttl <= TTL_MS * 3 // 2, (middle["id"], pttl)
    # only the chain is extended
    assert await redis.pttl(prefix + unrelated["id"]) <= 60_000


async def test_an_expired_ancestor_is_404(http: httpx.Client, redis: aioredis.Redis, tenant: str) -> None:
    head = create(http, "one")
    middle = create(http, "two", previous_interaction_id=head["id"])
    await redis.delete(f"ix:{{{tenant}}}:{head['id']}")  # as if it had expired
    # ancestors never expire before their descendants, so a process that holds this chain's history
    # uses it; a delete through the API makes every process drop what it holds for the tenant
    throwaway = create(http, "throwaway")
    assert http.delete(f"{PATH}/{throwaway['id']}").status_code == 200
    assert_error(
        http.post(PATH, json={"model": "echo", "input": "three", "previous_interaction_id": middle["id"]}),
        404,
        head["id"],
    )


# ---------------------------------------------------------------------------------------------------------
# delete


async def test_delete(http: httpx.Client, redis: aioredis.Redis, tenant: str) -> None:
    made = create(http, "to be deleted")
    item = f"{PATH}/{made['id']}"
    response = http.delete(item)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {}
    assert_error(http.get(item, params={"stream": "false"}), 404, made["id"])
    assert_error(
        http.post(PATH, json={"model": "echo", "input": "more", "previous_interaction_id": made["id"]}),
        404,
        made["id"],
    )
    assert_error(http.delete(item), 404, made["id"])
    assert_error(http.post(f"{item}/cancel"), 404, made["id"])
    assert await tenant_keys(redis, tenant) == []


def test_delete_with_the_sdk(client: genai.Client) -> None:
    head = id_of(interaction(client.interactions.create(model="echo", input="first")))
    child = id_of(
        interaction(client.interactions.create(model="echo", input="second", previous_interaction_id=head))
    )
    assert client.interactions.delete(head) is None
    with pytest.raises(sdk_errors.NotFoundError) as info:
        client.interactions.get(head)
    assert head in str(info.value)
    # continuing from the child walks to the deleted head: the missing id is named
    with pytest.raises(sdk_errors.NotFoundError) as info:
        client.interactions.create(model="echo", input="third", previous_interaction_id=child)
    assert head in str(info.value)
    # the child itself is still readable
    assert client.interactions.get(child).output_text == "second"


# ---------------------------------------------------------------------------------------------------------
# probes, OpenAPI, Vertex


def test_health_probes(anonymous: httpx.Client) -> None:
    for path in ("/healthz", "/readyz"):
        response = anonymous.get(path)
        assert response.status_code == 200, path
        assert response.headers["content-type"].startswith("application/json")


def test_openapi_document(anonymous: httpx.Client) -> None:
    response = anonymous.get("/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    document = response.json()
    assert document["openapi"].startswith("3.")
    paths = document["paths"]
    assert "/{version}/interactions" in paths
    assert "post" in paths["/{version}/interactions"]
    assert {"get", "delete"} <= set(paths["/{version}/interactions/{id}"])
    assert "post" in paths["/{version}/interactions/{id}/cancel"]
    schemas = document["components"]["schemas"]
    assert {"CreateRequest", "Interaction"} <= set(schemas)
    assert {"model", "agent", "input", "store", "background", "previous_interaction_id"} <= set(
        schemas["CreateRequest"]["properties"]
    )
    assert {"id", "status", "steps", "usage"} <= set(schemas["Interaction"]["properties"])


def test_vertex_path_segment(http: httpx.Client) -> None:
    vertex = "/v1beta1/projects/p/locations/l/interactions"
    response = http.post(vertex, json={"model": "echo", "input": "via vertex"})
    assert response.status_code == 200, response.text
    made = response.json()
    got = http.get(f"{vertex}/{made['id']}", params={"stream": "false"})
    assert got.status_code == 200
    assert got.json()["id"] == made["id"]
    assert [s["type"] for s in got.json()["steps"]] == ["user_input", "model_output"]
    # the same resource on the plain path
    assert http.get(f"/v1beta1/interactions/{made['id']}").json()["id"] == made["id"]
    assert http.get(f"/v1/interactions/{made['id']}").json()["id"] == made["id"]
    assert http.delete(f"{vertex}/{made['id']}").json() == {}
    assert_error(http.get(f"{vertex}/{made['id']}"), 404)


def test_every_version_segment(http: httpx.Client) -> None:
    for version in ("v1", "v1beta", "v1alpha", "v1beta1"):
        response = http.post(f"/{version}/interactions", json={"model": "echo", "input": version})
        assert response.status_code == 200, version


# ---------------------------------------------------------------------------------------------------------
# "keys" auth mode, on its own server

KEY_A = "team-a-secret-key"
KEY_B = "team-b-secret-key"


def sha256(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


@pytest.fixture(scope="module")
def keys_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedApp]:
    """The app in this process, configured with two listed keys."""
    config = {"auth": {"mode": "keys", "keys": {sha256(KEY_A): "team-a", sha256(KEY_B).upper(): "team-b"}}}
    with threaded(Path(tmp_path_factory.mktemp("keys-mode")), config=config) as app:
        yield app


def test_keys_mode(keys_app: ThreadedApp) -> None:
    url = keys_app.url
    body = {"model": "echo", "input": "hi team"}
    with httpx.Client(base_url=url, timeout=30) as anonymous:
        made = anonymous.post(PATH, json=body, headers={"x-goog-api-key": KEY_A})
        assert made.status_code == 200, made.text
        item = f"{PATH}/{made.json()['id']}"
        assert anonymous.get(item, params={"key": KEY_A}).status_code == 200
        assert anonymous.get(item, headers={"authorization": f"Bearer {KEY_A}"}).status_code == 200
        # a listed key of another tenant does not see it
        assert_error(anonymous.get(item, headers={"x-goog-api-key": KEY_B}), 404)
        # the digest may be configured in upper case
        assert anonymous.post(PATH, json=body, headers={"x-goog-api-key": KEY_B}).status_code == 200
        # unlisted keys, a digest sent as the key, no key
        for key in ("not-a-listed-key", sha256(KEY_A), KEY_A.upper()):
            assert_error(anonymous.post(PATH, json=body, headers={"x-goog-api-key": key}), 401)
            assert_error(anonymous.get(item, headers={"x-goog-api-key": key}), 401)
        assert_error(anonymous.post(PATH, json=body), 401)
        assert anonymous.get("/healthz").status_code == 200

    redis = SyncRedis.from_url(keys_app.redis_url)
    try:
        # one record each, with its body (beside the search indexes it is in)
        team_a = records(list(redis.scan_iter(match="ix:{team-a}:*")))
        record = f"ix:{{team-a}}:{made.json()['id']}"
        assert [k.decode() for k in team_a] == [record]
        assert redis.exists(record + keys.BODY_SUFFIX)
        assert len(records(list(redis.scan_iter(match="ix:{team-b}:*")))) == 1
        for key in redis.scan_iter():
            assert KEY_A.encode() not in key and KEY_B.encode() not in key
            if redis.type(key) == b"hash":
                values = cast(dict[bytes, bytes], redis.hgetall(key))
                assert not any(KEY_A.encode() in v or KEY_B.encode() in v for v in values.values())
    finally:
        redis.close()


def test_keys_mode_with_the_sdk(keys_app: ThreadedApp) -> None:
    listed, unlisted = sdk(keys_app.url, KEY_A), sdk(keys_app.url, "unlisted")
    reply = interaction(listed.interactions.create(model="echo", input="sdk in keys mode"))
    assert reply.output_text == "sdk in keys mode"
    assert listed.interactions.get(id_of(reply)).output_text == "sdk in keys mode"
    with pytest.raises(sdk_errors.AuthenticationError):
        unlisted.interactions.create(model="echo", input="x")


@pytest.fixture(scope="module")
def short_ttl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedApp]:
    """Interactions that live 2 s, so that time really passes on a chain."""
    with threaded(Path(tmp_path_factory.mktemp("ttl")), config={"store": {"ttl_seconds": 2}}) as app:
        yield app


def test_a_live_chain_never_loses_its_head(short_ttl: ThreadedApp) -> None:
    url = short_ttl.url
    with httpx.Client(base_url=url, headers={"x-goog-api-key": new_key()}, timeout=30) as client:
        turns = [create(client, "turn 0")]
        for i in range(1, 6):  # 3.75 s: the head's own TTL ran out long ago
            time.sleep(0.75)
            turns.append(create(client, f"turn {i}", previous_interaction_id=turns[-1]["id"]))
        for turn in turns:
            got = client.get(f"{PATH}/{turn['id']}", params={"stream": "false"})
            assert got.status_code == 200, (turn["id"], got.text)
        last = create(client, "and on", previous_interaction_id=turns[-1]["id"])
        assert last["usage"]["total_input_tokens"] == 6 * 4 + 2


def records(names: list[bytes]) -> list[bytes]:
    """The interactions' hashes among a tenant's keys, without their bodies, the search indexes, the
    usage totals and the count of what it stores (store/keys.py)."""
    return [
        name
        for name in names
        if b":idx:" not in name
        and not is_usage_key(name)
        and not name.endswith((b":expiries", b":stored"))
        and not name.endswith(keys.BODY_SUFFIX.encode())
    ]
