"""Everything a process needs to serve or run interactions, built from the settings and torn down again.

Web processes and worker processes build the same runtime; each keeps the two Redis clients of
`store.connection` (commands and jobs; blocking reads), the backends' HTTP clients, and three background
tasks: the broadcast listener, the reaper of lost runs and the event-log writer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import msgspec
from arq.connections import ArqRedis
from redis.asyncio import Redis

from .events.log import EventLog
from .runner import signals
from .runner.registry import RunRegistry
from .runner.service import InteractionService
from .settings import Settings
from .store import connection, heartbeats, keys
from .store.outage import Outage
from .store.repository import Repository
from .upstream.routing import Router

log = logging.getLogger(__name__)

JOB_NAME = "run_interaction"


def job_serializer(job: dict[str, object]) -> bytes:
    # arq pickles by default; a job here is names and numbers only
    return msgspec.msgpack.encode(job)


def job_deserializer(data: bytes) -> dict[str, object]:
    job: dict[str, object] = msgspec.msgpack.decode(data)
    return job


class Runtime:
    def __init__(self, settings: Settings, redis: ArqRedis, blocking: Redis) -> None:
        self.settings = settings
        self.redis = redis
        self.blocking = blocking
        self.repository = Repository(redis, settings.store, settings.runner)
        self.router = Router(settings.models, settings.echo)
        self.registry = RunRegistry()
        self.outage = Outage()
        self.service = InteractionService(
            settings, self.repository, blocking, self.router, self.registry, self.enqueue, self.outage
        )
        self.events = EventLog(redis, blocking, self.repository, settings.runner.keepalive_seconds)
        self._tasks: list[asyncio.Task[None]] = []

    @classmethod
    async def open(cls, settings: Settings) -> Runtime:
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
            longest_block=max(runner.keepalive_seconds, runner.cancel_ack_timeout_seconds),
        )
        try:
            await connection.ping(target, redis, blocking)
        except BaseException:
            await blocking.aclose()
            await redis.aclose()
            raise
        runtime = cls(settings, redis, blocking)
        listening = asyncio.Event()
        channels: dict[str, Callable[[str], object]] = {
            keys.CANCEL_CHANNEL: runtime.registry.stop,
            keys.FORGET_CHANNEL: runtime.service.histories.forget_tenant,
        }
        runtime._tasks = [
            asyncio.create_task(
                signals.listen(
                    redis, channels, listening, runtime.outage, runtime.service.histories.forget_all
                )
            ),
            asyncio.create_task(runtime.service.reap_forever()),
            asyncio.create_task(runtime.service.writer.run()),
        ]
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5):
                await listening.wait()
        return runtime

    async def enqueue(self, tenant: str, interaction_id: str, fence: int) -> None:
        # arq queues in a transaction (a pipeline), which the client's per-command bound does not cover
        async with asyncio.timeout(self.settings.store.redis_timeout_seconds):
            await self._enqueue(tenant, interaction_id, fence)

    async def _enqueue(self, tenant: str, interaction_id: str, fence: int) -> None:
        await self.redis.enqueue_job(
            JOB_NAME,
            tenant,
            interaction_id,
            fence,
            _job_id=keys.job_id(tenant, interaction_id, fence),
            _queue_name=self.settings.worker.queue_name,
        )

    async def unready(self) -> str | None:
        """Why this process cannot serve now, or None: each Redis client must answer, and some worker
        must be consuming the queue (else background interactions would wait for ever)."""
        try:
            async with asyncio.timeout(2):
                await self.redis.ping()
                await self.blocking.ping()
                queue, interval = self.settings.worker.queue_name, self.settings.worker.heartbeat_seconds
                consumers = await heartbeats.alive(self.redis, queue, interval)
        except TimeoutError:
            return "Redis does not answer (nothing within 2 s)"
        except Exception as exc:
            return f"Redis does not answer ({type(exc).__name__}: {exc})"
        if consumers == 0:
            return (
                f"no worker consumes the queue {queue!r} (none heard from in the last "
                f"{heartbeats.MISSED_BEATS * interval:g} s): start one (make worker), or let the web "
                "processes run one (EMBEDDED_WORKER=1)"
            )
        return None

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.router.aclose()
        await self.blocking.aclose()
        await self.redis.aclose()
