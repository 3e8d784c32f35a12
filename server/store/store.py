"""The store of a process: both of its Redis clients and the repositories over them, one per concern.

    interactions  records: chains, create, get, delete            (store/interactions.py)
    runs          leases, fences, status changes, log writes      (store/runs.py)
    log           reads of the event logs                         (store/event_log.py)
    jobs          the arq queue                                   (store/jobs.py)
    idempotency   Idempotency-Key records                         (store/idempotency.py)
    webhook_outcomes  what webhook deliveries came to             (store/webhook_outcomes.py)
    webhooks      the tenants' webhooks                           (store/webhooks.py)
    signing_keys  the RS256 keys of webhook_config deliveries     (store/signing_keys.py)
    agents        the tenants' agents                             (store/agents.py)
    search        pages of interactions found by the search indexes (store/search.py)
    deletions     the progress of delete-by-filter jobs           (store/deletions.py)

Both clients are built here from one parsed REDIS_URL (store/connection.py) and pinged before the store
is handed out, so a client that cannot connect fails the start, not a request. The scripts, the request
path's Redis work, go over a third, pipelined client of the same URL (store/direct.py) where it can serve
it (plain TCP and unix sockets; with TLS they use the commands client).
"""

from __future__ import annotations

import asyncio

from arq.connections import ArqRedis
from redis.asyncio import Redis

from ..settings import Settings
from . import connection, heartbeats
from .agents import Agents
from .deletions import Deletions
from .direct import DirectRedis
from .event_log import EventLogStore
from .idempotency import IdempotencyKeys
from .interactions import Interactions
from .jobs import Jobs, job_deserializer, job_serializer
from .replica_acks import ReplicaGate
from .runs import Runs
from .scripts import Scripts
from .search import Search
from .signing_keys import SigningKeys
from .webhook_outcomes import WebhookOutcomes
from .webhooks import Webhooks


class Store:
    def __init__(self, settings: Settings, redis: ArqRedis, blocking: Redis) -> None:
        self.settings = settings
        #: commands, pub/sub and arq's queue (and the scripts when there is no direct client)
        self.redis = redis
        #: reads that block (a followed log, a cancel's acknowledgement)
        self.blocking = blocking
        store, runner = settings.store, settings.runner
        url, timeout = settings.redis_url or "", store.redis_timeout_seconds
        acks = ReplicaGate(store.replica_acks, store.replica_ack_timeout_ms) if store.replica_acks else None
        #: the scripts' pipelined connections (none when they wait for replicas); it connects on first use
        self.direct = (
            DirectRedis(url, bound=timeout, connect_timeout=timeout)
            if DirectRedis.supports(url) and acks is None
            else None
        )
        scripts = Scripts(redis, self.direct, acks)
        queue = settings.worker.queue_name
        self.interactions = Interactions(redis, scripts, store, runner, queue)
        self.runs = Runs(redis, blocking, scripts, store, runner, queue)
        self.log = EventLogStore(redis, blocking)
        self.jobs = Jobs(redis, blocking, scripts, settings.worker.queue_name, store.redis_timeout_seconds)
        self.idempotency = IdempotencyKeys(redis, store.idempotency_ttl_seconds)
        self.webhook_outcomes = WebhookOutcomes(redis, scripts, settings.webhooks)
        self.webhooks = Webhooks(redis, scripts)
        self.signing_keys = SigningKeys(redis, scripts)
        self.agents = Agents(redis, scripts)
        self.search = Search(scripts)
        self.deletions = Deletions(redis)

    @classmethod
    async def open(cls, settings: Settings) -> Store:
        if settings.redis_url is None:
            raise connection.RedisUrlError("REDIS_URL is not set")
        target = connection.parse(settings.redis_url)
        runner = settings.runner
        redis, blocking = connection.build(
            target,
            settings.worker.queue_name,
            job_serializer,
            job_deserializer,
            timeout=settings.store.redis_timeout_seconds,
            longest_block=max(
                runner.keepalive_seconds,
                runner.cancel_ack_timeout_seconds,
                settings.worker.poll_delay_ms / 1000,
            ),
        )
        try:
            await connection.ping(target, redis, blocking)
        except BaseException:
            await connection.close(blocking, redis)
            raise
        return cls(settings, redis, blocking)

    async def unready(self) -> str | None:
        """Why this process cannot serve now, or None: both clients must answer, and some worker must
        be consuming the queue (else background interactions would wait for ever)."""
        worker = self.settings.worker
        try:
            async with asyncio.timeout(2):
                await self.redis.ping()
                await self.blocking.ping()
                consumers = await heartbeats.alive(self.redis, worker.queue_name, worker.heartbeat_seconds)
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
        if self.direct is not None:
            await self.direct.aclose()
        await connection.close(self.blocking, self.redis)
