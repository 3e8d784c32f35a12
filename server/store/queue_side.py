"""The keys every tenant shares: arq's queue, its wake tokens and the tenants' turns (keys.ring,
keys.waiting), the workers' heartbeats, the running set (keys.RUNNING) and the cancel and forget channels.

They live on the store's own Redis, or on REDIS_QUEUE_URL's when it is set (as it must be with a Cluster,
where keys without a tenant's hash tag cannot join a tenant's script). On one Redis (`together`), the
scripts that change a record change these in the same step. Apart, the store changes them in commands of
their own, ordered so that a crash between the two leaves work the reaper finds rather than loses:

    a run is watched (ZADD) before its record is stored, so a crash leaves a member whose record is
      missing, which the reaper drops (so is an interaction stored already ended, until its webhook job is
      queued);
    a lease is renewed after the write that proves the run still holds it (a crash there kills the run,
      whose old deadline then lets the reaper find it sooner);
    a run is forgotten (ZREM) after it is settled, and after its webhook job is queued, so a crash leaves
      an ended run in the set, which the reaper finishes off: queues the job again (arq's job id and the
      delivered marks make that harmless) and forgets it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from arq.connections import ArqRedis
from arq.constants import result_key_prefix
from redis.asyncio import Redis

from . import keys
from .direct import DirectRedis
from .jobs import EventJob, tenant_of
from .scripts import Scripts


class QueueSide:
    def __init__(
        self,
        redis: ArqRedis,
        blocking: Redis,
        scripts: Scripts,
        direct: DirectRedis | None = None,
        *,
        together: bool,
    ) -> None:
        #: arq's client (commands, pub/sub); reads that block (a worker waiting for a token)
        self.redis = redis
        self.blocking = blocking
        #: reap, wake and take
        self.scripts = scripts
        #: the request path's commands here (apart, a create's watch and forget) go pipelined where they
        #: can: through redis-py's client they cost the web process more than the create's own script
        self.direct = direct
        #: on the records' Redis: their scripts are given these keys too
        self.together = together

    async def _send(self, *command: Any) -> Any:
        if self.direct is not None:
            return await self.direct.execute(*command)
        return await self.redis.execute_command(*command)  # type: ignore[no-untyped-call]

    async def watch(self, member: str, deadline_ms: int) -> None:
        """Look at a run (`keys.member`) again at `deadline_ms` unless it is renewed or forgotten first."""
        await self._send("ZADD", keys.RUNNING, deadline_ms, member)

    async def renew(self, deadlines: dict[str, int]) -> None:
        """New deadlines for runs still watched (one that ended meanwhile is not watched again)."""
        if deadlines:
            pairs = [part for member, deadline in deadlines.items() for part in (deadline, member)]
            await self._send("ZADD", keys.RUNNING, "XX", *pairs)

    async def forget(self, *members: str) -> None:
        if members:
            await self._send("ZREM", keys.RUNNING, *members)

    async def cancel(self, members: Iterable[str]) -> None:
        """Tell every process to stop these runs at once."""
        for member in members:
            await self._send("PUBLISH", keys.CANCEL_CHANNEL, member)

    async def forget_tenant(self, tenant: str) -> None:
        """Every process drops the histories it caches for this tenant (after a delete)."""
        await self._send("PUBLISH", keys.FORGET_CHANNEL, tenant)

    async def queue_event_job(self, job: EventJob) -> None:
        """Queue an interaction's webhook job that its script found due (scripts/_notify.lua does this
        itself when together); nothing when it is queued already."""
        _gate, job_key, queue, wake = job.keys
        await self.scripts.wake(
            keys=[job_key, result_key_prefix + job.job, queue, wake],
            args=[job.job, job.data, job.now, job.ttl_ms, job.max_tokens, tenant_of(job.job)],
        )

    def script_keys(self, *names: str) -> list[str]:
        """`names`, for a script given the shared keys too (together), or none of them (apart)."""
        return list(names) if self.together else []
