"""GET /{v}/interactions (our extension): pages newest first, filters, the views listed, tenants kept apart,
deleted and expired interactions gone from the list and from the indexes. On `make run`'s topology (a
private Redis on its unix socket, the worker inside the web process) and on a stack whose interactions live
three seconds."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from server.store import keys, search_tags
from server.store.search import PAGE_BUDGET

from ..support import TOPOLOGIES, Stack, StackSpec, running_stacks
from ..waiting import until
from .support import Tenant

TTL = 3


@pytest.fixture(scope="module")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, Stack]]:
    specs = [
        StackSpec(tmp_path_factory.mktemp("list"), topology=TOPOLOGIES["make-run"]),
        StackSpec(
            tmp_path_factory.mktemp("list-ttl"),
            config={"store": {"ttl_seconds": TTL}},
            topology=TOPOLOGIES["tcp-embedded"],
        ),
    ]
    with running_stacks(specs) as (main, short):
        yield main, short


@pytest.fixture
def stack(stacks: tuple[Stack, Stack]) -> Stack:
    return stacks[0]


@pytest.fixture
def tenant(stack: Stack, tenants: Callable[[Stack], Tenant]) -> Tenant:
    return tenants(stack)


def test_pages_are_newest_first_and_cover_everything_once(tenant: Tenant) -> None:
    made = [tenant.turn(f"turn {n}") for n in range(7)]
    assert tenant.ids() == made[::-1]
    assert tenant.ids(page_size=2) == made[::-1]
    first = tenant.listed(page_size=3)
    assert len(first["interactions"]) == 3 and first["next_page_token"]
    assert tenant.listed(page_size=100).get("next_page_token") is None


def test_items_are_the_interaction_without_steps_unless_asked(tenant: Tenant) -> None:
    made = tenant.turn("show me", labels={"user": "u1"})
    item = tenant.listed()["interactions"][0]
    got = tenant.http.get(f"/v1beta/interactions/{made}").json()
    assert "steps" not in item
    assert {k: v for k, v in got.items() if k != "steps"} == item
    full = tenant.listed(include_steps="true")["interactions"][0]
    assert full == got


def test_labels_are_anded_and_chains_keep_their_own_labels(tenant: Tenant) -> None:
    a = tenant.turn("a", labels={"user": "u1", "session": "s1"})
    b = tenant.turn("b", labels={"user": "u1", "session": "s2"})
    c = tenant.turn("c", labels={"user": "u2", "session": "s1"}, after=a)
    assert tenant.ids(**{"labels.user": "u1"}) == [b, a]
    assert tenant.ids(**{"labels.session": "s1"}) == [c, a]
    assert tenant.ids(**{"labels.user": "u1", "labels.session": "s1"}) == [a]
    assert tenant.ids(**{"labels.user": "nobody"}) == []
    assert tenant.ids(roots_only="true") == [b, a]


def test_status_model_and_time_filters(tenant: Tenant) -> None:
    done = tenant.turn("finished")
    slow = tenant.turn("word " * 400, model="echo-slow", background=True)
    until(lambda: tenant.ids(status="in_progress") == [slow], timeout=15)
    tenant.sdk.interactions.cancel(id=slow)
    until(lambda: tenant.ids(status="cancelled") == [slow], timeout=15)
    assert tenant.ids(status="completed") == [done]
    assert tenant.ids(status="completed,cancelled") == [slow, done]
    assert tenant.ids(model="echo-slow") == [slow]
    assert tenant.ids(model="models/echo") == [done]
    assert tenant.ids(created_after="2000-01-01T00:00:00Z", created_before="2000-01-02T00:00:00+00:00") == []
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 60))
    assert tenant.ids(created_before=now, created_after="2000-01-01T00:00:00Z") == [slow, done]
    assert tenant.ids(created_after=now) == []


@pytest.mark.filterwarnings("ignore:Agents usage is experimental:UserWarning")
def test_agent_filter(tenant: Tenant) -> None:
    agent = tenant.sdk.agents.create(id="listed-agent", base_agent="echo", system_instruction="be brief")
    by_agent = tenant.turn("through the agent", agent=agent.id)
    tenant.turn("plain")
    assert tenant.ids(agent="listed-agent") == [by_agent]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"status": "done"}, "status"),
        ({"created_after": "yesterday"}, "created_after"),
        ({"created_before": "2026-01-01T00:00:00"}, "created_before"),
        ({"roots_only": "maybe"}, "roots_only"),
        ({"roots_only": ""}, "roots_only"),
        ({"model": ""}, "model"),
        ({"page_size": "-1"}, "page_size"),
        ({"page_token": "not-a-token"}, "page_token"),
        ({"user": "u1"}, "user"),
    ],
)
def test_bad_parameters_are_400s_naming_them(tenant: Tenant, query: dict[str, str], field: str) -> None:
    status, message = tenant.error("GET", "/v1beta/interactions", params=query)
    assert status == 400 and f"`{field}`" in message


def test_tenants_see_only_their_own(stack: Stack, tenants: Callable[[Stack], Tenant]) -> None:
    one, two = tenants(stack), tenants(stack)
    mine = one.turn("mine", labels={"user": "shared"})
    theirs = two.turn("theirs", labels={"user": "shared"})
    assert one.ids() == [mine] and two.ids() == [theirs]
    assert one.ids(**{"labels.user": "shared"}) == [mine]
    assert tenants(stack).listed() == {"interactions": []}
    reply = one.http.get("/v1beta/interactions", headers={"x-goog-api-key": ""})
    assert reply.status_code == 401


def test_a_deleted_interaction_leaves_the_list_and_every_index(stack: Stack, tenant: Tenant) -> None:
    kept = tenant.turn("kept", labels={"user": "u1"})
    gone = tenant.turn("gone", labels={"user": "u1"}, after=kept)
    tenant.sdk.interactions.delete(id=gone)
    assert tenant.ids() == [kept]
    assert tenant.ids(**{"labels.user": "u1"}) == [kept]
    store = redis.Redis.from_url(stack.redis_url)
    for tag in ("all", search_tags.label_tag("user", "u1"), search_tags.model_tag("echo")):
        index = keys.search_index(tenant.id, tag)
        assert store.zscore(index, gone) is None and store.zscore(index, kept) is not None, tag
    # the conversation's index held its later turn only: empty, it is gone
    assert store.exists(keys.search_index(tenant.id, search_tags.conversation_tag(kept))) == 0


def test_the_vertex_path_lists_too(stack: Stack, tenant: Tenant) -> None:
    made = tenant.turn("vertex")
    reply = tenant.http.get("/v1beta1/projects/p/locations/us-central1/interactions")
    assert [item["id"] for item in reply.json()["interactions"]] == [made]


def test_expired_interactions_leave_the_list_and_their_indexes_expire(
    stacks: tuple[Stack, Stack], tenants: Callable[[Stack], Tenant]
) -> None:
    short = stacks[1]
    tenant = tenants(short)
    tenant_id = tenant.id
    first = tenant.turn("old", labels={"user": "u1"})
    tenant.turn("old reply", labels={"user": "u1"}, after=first)
    store = redis.Redis.from_url(short.redis_url)
    label_index = keys.search_index(tenant_id, search_tags.label_tag("user", "u1"))
    assert store.zcard(label_index) == 2
    # a chain is kept half a TTL beyond its newest turn; its indexes as long as it
    until(lambda: not store.exists(keys.interaction(tenant_id, first)), timeout=TTL * 3)
    assert tenant.ids() == [] and tenant.ids(**{"labels.user": "u1"}) == []
    until(lambda: not tenant.keys(), timeout=TTL * 3)


def test_an_expired_id_leaves_the_index_a_list_reads(
    stacks: tuple[Stack, Stack], tenants: Callable[[Stack], Tenant]
) -> None:
    """An index small enough to be one segment keeps an expired id until the segment expires with its
    last member (scripts/_index.lua): never listed, and taken out by the first list that reads it."""
    short = stacks[1]
    tenant = tenants(short)
    old = tenant.turn("old", labels={"user": "u1"})
    store = redis.Redis.from_url(short.redis_url)
    until(lambda: not store.exists(keys.interaction(tenant.id, old)), timeout=TTL * 3)
    fresh = tenant.turn("fresh", labels={"user": "u1"})
    label_index = keys.search_index(tenant.id, search_tags.label_tag("user", "u1"))
    assert tenant.ids(**{"labels.user": "u1"}) == [fresh]
    assert store.zrange(label_index, 0, -1) == [fresh.encode()]
    assert store.exists(keys.search_index(tenant.id, search_tags.conversation_tag(old))) == 0


def test_a_sparse_filter_answers_short_pages_that_go_on(tenant: Tenant) -> None:
    """A page reads at most PAGE_BUDGET ids: a status no index narrows, under more than that many newer
    interactions, comes after an empty page that still has a next_page_token."""
    old = tenant.turn("word " * 400, model="echo-slow", background=True)
    tenant.sdk.interactions.cancel(id=old)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: tenant.turn(f"newer {n}"), range(PAGE_BUDGET + 20)))
    first = tenant.listed(status="cancelled")
    assert first["interactions"] == [] and first["next_page_token"]
    assert tenant.ids(status="cancelled") == [old]
