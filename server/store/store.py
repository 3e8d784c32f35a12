"""The store of a process: both of its Redis clients and the repositories over them, one per concern.

    interactions  records: chains, create, get, delete            (store/interactions.py)
    runs          leases, fences, status changes, log writes      (store/runs.py)
    log           reads of the event logs                         (store/event_log.py)
    jobs          the arq queue                                   (store/jobs.py)
    webhook_outcomes  what webhook deliveries came to             (store/webhook_outcomes.py)
    webhooks      the tenants' webhooks                           (store/webhooks.py)
    signing_keys  the RS256 keys of webhook_config deliveries     (store/signing_keys.py)
    agents        the tenants' agents                             (store/agents.py)
    triggers      the tenants' triggers and their executions      (store/triggers.py)
    search        pages of interactions found by the search indexes (store/search.py)
    deletions     the progress of delete-by-filter jobs           (store/deletions.py)
    usage         what tenants used, by day                       (store/usage.py)
    limits        tenants' limits against what they used          (store/limits.py)

Both clients are built here from one parsed REDIS_URL (store/connection.py) and pinged before the store
is handed out, so a client that cannot connect fails the start, not a request. The scripts, the request
path's Redis work, go over a third, pipelined client of the same URL (store/direct.py; on a Cluster,
store/direct_cluster.py) where it can serve it (plain TCP and unix sockets; with TLS they use the commands
client).

With REDIS_QUEUE_URL (required with a Cluster REDIS_URL), the keys every tenant shares (arq's queue, the
running set, the channels) live on that Redis, with clients of their own (store/queue_side.py).
"""

from __future__ import annotations

import asyncio

from arq.connections import ArqRedis
from redis.asyncio import Redis

from ..settings import Settings
from . import connection, heartbeats
from .agents import Agents
from .deadlines import Deadlines, redis_ms
from .deletions import Deletions
from .direct import DirectRedis
from .direct_cluster import DirectCluster
from .event_log import EventLogStore
from .interactions import Interactions
from .jobs import Jobs, job_deserializer, job_serializer
from .limits import LimitsStore
from .queue_side import QueueSide
from .replica_acks import ReplicaGate
from .runs import Runs
from .scripts import Scripts
from .search import Search
from .signing_keys import SigningKeys
from .triggers import Triggers
from .usage import UsageStore
from .webhook_outcomes import WebhookOutcomes
from .webhooks import Webhooks


class Store:
    def __init__(
        self, settings: Settings, redis: Redis, blocking: Redis, queue: tuple[ArqRedis, Redis] | None = None
    ) -> None:
        """`queue`: the clients of REDIS_QUEUE_URL (None: `redis`, which is then arq's client, has it all)."""
        self.settings = settings
        #: commands and the scripts of the records (when there is no direct client)
        self.redis = redis
        #: reads that block (a followed log, a cancel's acknowledgement)
        self.blocking = blocking
        store, runner = settings.store, settings.runner
        acks = ReplicaGate(store.replica_acks, store.replica_ack_timeout_ms) if store.replica_acks else None
        #: the scripts' pipelined connections (none when they wait for replicas); they connect on first use
        self.direct = self._direct(settings.redis_url or "", acks)
        #: when a write sent now must have run, or not at all (store/deadlines.py), per Redis
        self.deadlines = [_deadlines(redis, store.redis_timeout_seconds)]
        scripts = Scripts(redis, self.direct, acks, self.deadlines[0])
        if queue is None:
            assert isinstance(redis, ArqRedis)
            self.queue_direct = None
            self.queue = QueueSide(redis, blocking, scripts, together=True)
        else:
            direct = self._direct(settings.redis_queue_url or "", acks)
            assert not isinstance(direct, DirectCluster)  # settings refuse a Cluster's queue
            self.queue_direct = direct
            self.deadlines.append(_deadlines(queue[0], store.redis_timeout_seconds))
            queue_scripts = Scripts(queue[0], direct, acks, self.deadlines[1])
            self.queue = QueueSide(*queue, queue_scripts, direct, together=False)
        name = settings.worker.queue_name
        self.interactions = Interactions(redis, scripts, self.queue, store, runner, name)
        self.runs = Runs(redis, blocking, scripts, self.queue, store, runner, name)
        self.log = EventLogStore(redis, blocking)
        self.jobs = Jobs(
            self.queue.redis, self.queue.blocking, self.queue.scripts, name, store.redis_timeout_seconds
        )
        self.webhook_outcomes = WebhookOutcomes(redis, scripts, settings.webhooks)
        self.webhooks = Webhooks(redis, scripts)
        self.signing_keys = SigningKeys(redis, scripts)
        self.agents = Agents(redis, scripts)
        self.triggers = Triggers(redis, scripts)
        self.search = Search(scripts)
        self.deletions = Deletions(redis, scripts)
        self.usage = UsageStore(redis, scripts, store.usage_ttl_seconds)
        self.limits = LimitsStore(redis, scripts)

    def _direct(self, url: str, acks: ReplicaGate | None) -> DirectRedis | DirectCluster | None:
        """A pipelined client of `url` for its scripts, where it can serve them and they do not wait for
        replicas (a WAIT would hold every request pipelined on its connection)."""
        timeout = self.settings.store.redis_timeout_seconds
        cluster = connection.parse(url).cluster if url else None
        if cluster is not None:
            return DirectCluster(cluster, bound=timeout, connect_timeout=timeout)
        if not DirectRedis.supports(url) or acks is not None:
            return None
        return DirectRedis(url, bound=timeout, connect_timeout=timeout)

    @classmethod
    async def open(cls, settings: Settings) -> Store:
        if settings.redis_url is None:
            raise connection.RedisUrlError("REDIS_URL is not set")
        target = connection.parse(settings.redis_url)
        if target.cluster is not None and settings.store.replica_acks:
            raise connection.RedisUrlError(
                "store.replica_acks: not supported with a Cluster REDIS_URL (set it to 0; a Cluster's "
                "primaries have their own replicas, and WAIT counts one node's)"
            )
        timeouts = _timeouts(settings)
        clients = connection.build_records(target, **timeouts) or connection.build(
            target, settings.worker.queue_name, job_serializer, job_deserializer, **timeouts
        )
        opened: list[Redis] = list(clients)
        try:
            await connection.ping(target, *clients)
            queue = None
            if settings.redis_queue_url is not None:
                queue_target = connection.parse(settings.redis_queue_url, "REDIS_QUEUE_URL")
                queue = connection.build(
                    queue_target, settings.worker.queue_name, job_serializer, job_deserializer, **timeouts
                )
                opened += queue
                await connection.ping(queue_target, *queue)
            store = cls(settings, *clients, queue)
            for deadlines in store.deadlines:
                await deadlines.calibrate()
        except BaseException:
            await connection.close(*opened)
            raise
        return store

    async def unready(self) -> str | None:
        """Why this process cannot serve now, or None: both clients must answer, and some worker must
        be consuming the queue (else background interactions would wait for ever)."""
        worker = self.settings.worker
        try:
            async with asyncio.timeout(2):
                for client in {self.redis, self.blocking, self.queue.redis, self.queue.blocking}:
                    await client.ping()
                consumers = await heartbeats.alive(
                    self.queue.redis, worker.queue_name, worker.heartbeat_seconds
                )
        except TimeoutError:
            return "Redis does not answer (nothing within 2 s)"
        except Exception as exc:
            return f"Redis does not answer ({type(exc).__name__}: {exc})"
        if consumers == 0:
            return (
                f"no worker consumes the queue {worker.queue_name!r} (none heard from in the last "
                f"{heartbeats.MISSED_BEATS * worker.heartbeat_seconds:g} s): start one (make worker), or let "
                "the web processes run one (EMBEDDED_WORKER=1)"
            )
        return None

    async def close(self) -> None:
        for direct in (self.direct, self.queue_direct):
            if direct is not None:
                await direct.aclose()
        await connection.close(*{self.blocking, self.redis, self.queue.redis, self.queue.blocking})


def _deadlines(redis: Redis, bound: float) -> Deadlines:
    async def clock() -> int:
        return redis_ms(await redis.time())

    return Deadlines(bound, clock)


def _timeouts(settings: Settings) -> dict[str, float]:
    runner = settings.runner
    return {
        "timeout": settings.store.redis_timeout_seconds,
        "longest_block": max(
            runner.keepalive_seconds, runner.cancel_ack_timeout_seconds, settings.worker.poll_delay_ms / 1000
        ),
    }
