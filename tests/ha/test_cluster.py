"""Redis Cluster (REDIS_URL=redis+cluster://…, REDIS_QUEUE_URL=redis://…): three primaries on loopback hold
the records, each tenant's in the slot of its hash tag; the stack's own Redis holds the queue, the running
set and the channels. As the README starts it: a web process with its worker inside (`make run`) and a
worker process (`make worker`); they run the lifecycle through the official SDK, and a tenant's slot is moved
to another node while that tenant's traffic goes on."""

from __future__ import annotations

import signal
import time
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
import redis
from google.genai._interactions import NotFoundError

from server.store import keys

from ..replies import all_events, id_of, interaction
from ..support import TOPOLOGIES, Stack, new_key, sdk, tenant_of
from ..waiting import until
from ..webhooks.receivers import Receiver, verify_dynamic, verify_static
from .cluster_nodes import Cluster, stack_on_cluster
from .load import PATH, Chainer, Creator, Follower, outcomes

#: webhooks to a loopback receiver, their JWTs with an issuer both processes agree on
ISSUER = "https://interactions.test"
CONFIG: dict[str, dict[str, Any]] = {"webhooks": {"allow": ["127.0.0.0/8"], "issuer": ISSUER}}


@pytest.fixture(scope="module")
def clustered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, Cluster]]:
    with stack_on_cluster(tmp_path_factory.mktemp("cluster"), config=CONFIG) as both:
        yield both


@pytest.mark.filterwarnings("ignore:Agents usage is experimental:UserWarning")
def test_the_lifecycle_chains_streams_and_cancels_run_on_the_cluster(
    clustered: tuple[Stack, Cluster],
) -> None:
    stack, cluster = clustered
    key = new_key()
    client = sdk(stack.url, key)
    first = id_of(interaction(client.interactions.create(model="echo", input="one")))
    second = id_of(
        interaction(client.interactions.create(model="echo", input="two", previous_interaction_id=first))
    )
    assert client.interactions.get(id=second).previous_interaction_id == first
    streamed = [
        event.event_type
        for event in all_events(client.interactions.create(model="echo", input="s", stream=True))
    ]
    assert streamed[0] == "interaction.created" and streamed[-1] == "interaction.completed"
    background = id_of(interaction(client.interactions.create(model="echo", input="later", background=True)))
    until(lambda: client.interactions.get(id=background).status == "completed", timeout=15)
    slow = id_of(
        interaction(client.interactions.create(model="echo-slow", input="word " * 400, background=True))
    )
    until(lambda: client.interactions.get(id=slow).status == "in_progress", timeout=15)
    assert client.interactions.cancel(id=slow).status == "cancelled"
    client.interactions.delete(id=first)
    with pytest.raises(NotFoundError):
        client.interactions.get(id=first)

    # an agent, and a delete by filter (a job in a worker: its search and deletes on the tenant's node)
    client.agents.create(id="cluster-helper", base_agent="echo")
    assert interaction(client.interactions.create(agent="cluster-helper", input="hi")).status == "completed"
    labelled = id_of(interaction(client.interactions.create(model="echo", input="x", labels={"u": "1"})))
    with httpx.Client(base_url=stack.url, headers={"x-goog-api-key": key}, timeout=10) as http:
        reply = http.post(f"{PATH}:purge", json={"filter": {"labels": {"u": "1"}}, "force": True})
        assert reply.status_code == 200, reply.text
        operation = f"/v1beta/{reply.json()['name']}"
        until(lambda: http.get(operation).json()["done"], timeout=20)
        assert http.get(f"{PATH}/{labelled}").status_code == 404
        assert http.get(f"{PATH}/{second}").status_code == 200
        assert [agent["id"] for agent in http.get("/v1beta/agents").json()["agents"]] == ["cluster-helper"]

    # the tenant's records are on the one node serving its slot; the queue's Redis holds none of them
    tenant = tenant_of(key)
    owner = cluster.owner(cluster.slot_of(keys.tenant_prefix(tenant)))
    pattern = keys.tenant_prefix(tenant).replace("{", "[{]") + "*"
    placed = {port: len(list(cluster.client(port).scan_iter(match=pattern))) for port in cluster.ports}
    assert placed[owner] > 0 and sum(placed.values()) == placed[owner], placed
    queue = redis.Redis.from_url(stack.redis_url)
    try:
        assert list(queue.scan_iter(match="ix:[{]*")) == []
    finally:
        queue.close()


async def test_webhooks_hear_of_each_end_on_the_cluster(clustered: tuple[Stack, Cluster]) -> None:
    """The webhook job is queued on the queue's Redis when the record's script on the tenant's node found
    it due; a webhook_config's JWT is signed with the key kept on the Cluster."""
    stack, _cluster = clustered
    client = sdk(stack.url, new_key())
    async with Receiver() as receiver:
        created = await client.aio.webhooks.create(
            uri=receiver.uri, subscribed_events=cast(Any, ["interaction.completed"])
        )
        assert created.new_signing_secret
        background = interaction(
            await client.aio.interactions.create(model="echo", input="1", background=True)
        )
        foreground = interaction(await client.aio.interactions.create(model="echo", input="2"))
        payloads = [verify_static(r, created.new_signing_secret) for r in await receiver.wait_for(2)]
        assert {p["data"]["id"] for p in payloads} == {background.id, foreground.id}
        await receiver.nothing_more(2, 0.5)
    async with Receiver() as receiver:
        await client.aio.interactions.create(model="echo", input="3", webhook_config={"uris": [receiver.uri]})
        [request] = await receiver.wait_for(1)
        verify_dynamic(request, stack.url, ISSUER)


def test_tenants_spread_over_the_nodes(clustered: tuple[Stack, Cluster]) -> None:
    stack, cluster = clustered
    owners = set()
    for _ in range(12):
        key = new_key()
        created = httpx.post(
            f"{stack.url}{PATH}", json={"model": "echo", "input": "hi"}, headers={"x-goog-api-key": key}
        )
        assert created.status_code == 200, created.text
        owners.add(cluster.owner(cluster.slot_of(keys.tenant_prefix(tenant_of(key)))))
    assert len(owners) >= 2


def test_a_tenants_slot_moves_to_another_node_under_its_traffic(clustered: tuple[Stack, Cluster]) -> None:
    """The slot is moved by hand, a key at a time with a pause (a few seconds), while the tenant streams,
    creates, runs in the background and continues a conversation. Scripts are kept off the half-moved slot
    (store/cluster.py): requests wait for the move or fail with a 503, and nothing is lost or split."""
    stack, cluster = clustered
    key = new_key()
    slot = cluster.slot_of(keys.tenant_prefix(tenant_of(key)))
    source = cluster.owner(slot)
    target = next(port for port in cluster.ports if port != source)
    headers = {"x-goog-api-key": key}
    long_run = httpx.post(
        f"{stack.url}{PATH}",
        json={"model": "echo-slow", "input": "word " * 160, "background": True},
        headers=headers,
        timeout=10,
    ).json()["id"]
    follower = Follower(stack.url, key, long_run, within=60)
    creators = [
        Creator(stack.url, key, {"model": "echo", "input": "foreground"}),
        Creator(stack.url, key, {"model": "echo", "input": "later", "background": True}, pause=0.05),
        Chainer(stack.url, key),
    ]
    for thread in [follower, *creators]:
        thread.start()
    time.sleep(1.0)
    migration = cluster.start_migration(slot, target, per_key_pause=0.003)
    moved = migration.join(timeout=120)  # a BUSYKEY (a key written on both nodes) would raise here
    time.sleep(1.0)
    for creator in creators:
        creator.stop()
    follower.join(timeout=60)

    # each failure was a clean 503, soon (a script waits a second at most for a slot to settle)
    failures, acked = outcomes(creators)
    print(f"{moved} keys moved; {len(failures)} failed of {len(failures) + len(acked)} requests")
    assert cluster.owner(slot) == target and moved > 100
    cluster.check()
    assert len(acked) > len(failures)

    with httpx.Client(base_url=stack.url, headers=headers, timeout=10) as client:
        # nothing acknowledged was lost, and the search indexes moved with the records
        missing = [i for i in acked if client.get(f"{PATH}/{i}").status_code != 200]
        assert missing == [], f"{len(missing)} acknowledged interactions lost"
        listed = set()
        params: dict[str, str] = {"page_size": "100"}
        while True:
            reply = client.get(PATH, params=params)
            assert reply.status_code == 200, reply.text
            page = reply.json()
            listed |= {item["id"] for item in page["interactions"]}
            if not page.get("next_page_token"):
                break
            params["page_token"] = page["next_page_token"]
        assert set(acked) <= listed
        # the conversation goes on from its last turn, its whole chain found on the new node
        last = creators[2].acked[-1][1]
        more = client.post(PATH, json={"model": "echo", "input": "after", "previous_interaction_id": last})
        assert more.status_code == 200, more.text
        background = [i for _, i in creators[1].acked]

        def ended() -> bool:
            statuses = [client.get(f"{PATH}/{i}").json()["status"] for i in background]
            return "in_progress" not in statuses

        until(ended, timeout=45, interval=0.5)

    # the followed stream reached its end, every event once and in order
    assert follower.last_type == "interaction.completed"
    numbers = [int(event_id.removeprefix("evt_")) for event_id in follower.seen]
    assert numbers == list(range(1, len(numbers) + 1))


def test_a_worker_lost_mid_run_is_found_through_the_queues_redis(
    clustered: tuple[Stack, Cluster], tmp_path: Path
) -> None:
    """A second stack on the same Cluster, its queue on a Redis of its own and its workers apart from the
    web process: the run's lease lives on the queue's Redis, renewed as the run writes to its node; a
    worker killed mid-answer stops renewing it, and the reaper fails the run with what it made."""
    _stack, cluster = clustered
    stack = Stack(tmp_path / "stack", topology=TOPOLOGIES["tcp-workers"])
    try:
        stack.start_redis()
        env = {"REDIS_URL": cluster.url, "REDIS_QUEUE_URL": stack.redis_url}
        stack.start_server(**env)
        worker = stack.start_worker(**env)
        stack.wait_ready()
        key = new_key()
        with httpx.Client(base_url=stack.url, headers={"x-goog-api-key": key}, timeout=10) as client:
            body = {"model": "echo-slow", "input": "word " * 200, "background": True}
            item = f"{PATH}/{client.post(PATH, json=body).json()['id']}"
            member = keys.member(tenant_of(key), item.rpartition("/")[2])
            queue = redis.Redis.from_url(stack.redis_url)
            try:
                until(lambda: client.get(item).json()["status"] == "in_progress", timeout=15)
                # the lease is on the queue's Redis, and renewed as the run writes to its node
                leased = lease(queue, member)
                until(lambda: lease(queue, member) > leased > 0, timeout=5)
                # killed once its clients saw output (a run lost before any is re-run instead: reaper.py)
                saw_output(client, item)
                worker.signal(signal.SIGKILL)
                worker.wait(5)
                stack.start_worker(**env)
                until_failed(client, item, stack)
                record = client.get(item).json()
                assert record["errors"][0]["code"] == "worker_lost" and record["steps"]
                until(lambda: lease(queue, member) == 0, timeout=5)
            finally:
                queue.close()
    finally:
        stack.stop()


def saw_output(client: httpx.Client, item: str) -> None:
    """Its stream showed some of the answer (the event log holds output: the reaper keeps it)."""
    with client.stream("GET", item, params={"stream": "true"}, timeout=15) as events:
        for line in events.iter_lines():
            if line == "event: step.delta":
                return
    raise AssertionError("the stream ended before any output")


def until_failed(client: httpx.Client, item: str, stack: Stack) -> None:
    """The lease lapses, then the reaper's next pass fails the run (a loaded machine may delay both): a
    failure says which statuses were seen and what the workers logged."""
    seen: list[str] = []

    def failed() -> bool:
        seen.append(client.get(item).json()["status"])
        return seen[-1] == "failed"

    try:
        until(failed, timeout=30)
    except TimeoutError:
        logs = "\n".join(proc.log_path.read_text(errors="replace")[-1500:] for proc in stack.workers)
        raise AssertionError(f"never failed: statuses {sorted(set(seen))}; workers:\n{logs}") from None


def lease(queue: redis.Redis, member: str) -> float:
    """When the run's lease runs out (ms), as the running set on the queue's Redis says; 0: not there."""
    score = queue.zscore(keys.RUNNING, member)
    assert not isinstance(score, Awaitable)
    return float(score or 0)
