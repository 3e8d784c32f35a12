"""Everything a process needs to serve or run interactions, built from the settings and torn down again.

Web processes and worker processes build the same runtime; each keeps one Redis pool (which also
enqueues jobs), one pool for blocking reads, the backends' HTTP clients, and two background tasks: the
cancel listener and the reaper of lost runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import msgspec
from arq.connections import ArqRedis, RedisSettings, create_pool
from redis.asyncio import BlockingConnectionPool, Redis

from .events.log import EventLog
from .runner import signals
from .runner.registry import RunRegistry
from .runner.service import InteractionService
from .settings import Settings
from .store import keys
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


def redis_settings(url: str) -> RedisSettings:
    return RedisSettings.from_dsn(url)


class Runtime:
    def __init__(self, settings: Settings, redis: ArqRedis, blocking: Redis) -> None:
        self.settings = settings
        self.redis = redis
        self.blocking = blocking
        self.repository = Repository(redis, settings.store, settings.runner)
        self.router = Router(settings.models, settings.echo)
        self.registry = RunRegistry()
        self.service = InteractionService(
            settings, self.repository, blocking, self.router, self.registry, self.enqueue
        )
        self.events = EventLog(redis, blocking, self.repository, settings.runner.keepalive_seconds)
        self._tasks: list[asyncio.Task[None]] = []

    @classmethod
    async def open(cls, settings: Settings) -> Runtime:
        redis = await create_pool(
            redis_settings(settings.redis_url),
            job_serializer=job_serializer,
            job_deserializer=job_deserializer,
            default_queue_name=settings.worker.queue_name,
        )
        blocking = Redis(
            connection_pool=BlockingConnectionPool.from_url(
                # no socket timeout (reads block for a keep-alive interval); keepalive finds dead peers
                settings.redis_url,
                max_connections=2000,
                timeout=30,
                socket_timeout=None,
                socket_keepalive=True,
            )
        )
        runtime = cls(settings, redis, blocking)
        listening = asyncio.Event()
        channels: dict[str, Callable[[str], object]] = {
            keys.CANCEL_CHANNEL: runtime.registry.stop,
            keys.FORGET_CHANNEL: runtime.service.histories.forget_tenant,
        }
        runtime._tasks = [
            asyncio.create_task(
                signals.listen(redis, channels, listening, runtime.service.histories.forget_all)
            ),
            asyncio.create_task(runtime.service.reap_forever()),
            asyncio.create_task(runtime.service.writer.run()),
        ]
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5):
                await listening.wait()
        return runtime

    async def enqueue(self, tenant: str, interaction_id: str, fence: int) -> None:
        await self.redis.enqueue_job(
            JOB_NAME,
            tenant,
            interaction_id,
            fence,
            _job_id=keys.job_id(tenant, interaction_id, fence),
            _queue_name=self.settings.worker.queue_name,
        )

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.router.aclose()
        await self.blocking.aclose()
        await self.redis.aclose()
