"""`[store] replica_acks`: writes that count as done once replicas have them (Redis WAIT), and what the
writes do while no replica answers.

A WAIT counts the writes of the connection it is sent on, so each writing script is sent with its WAIT in
one pipeline. When the replicas do not acknowledge a write within the timeout, the write stands (a replica
being down must not stop writes) and, for DEGRADED_SECONDS, writes go on without waiting: otherwise every
write would wait the whole timeout while the primary has no replica (after a failover, say). The next write
after that waits again, and so finds out whether the replicas are back.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from redis.asyncio import Redis
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError

#: how long writes go unacknowledged after one the replicas did not acknowledge in time
DEGRADED_SECONDS = 5.0

log = logging.getLogger(__name__)


class ReplicaGate:
    def __init__(self, replicas: int, timeout_ms: int) -> None:
        self.replicas = replicas
        self.timeout_ms = timeout_ms
        self.degraded_until = 0.0
        self.degraded = False

    async def write(
        self, redis: Redis, script: AsyncScript, name: str, keys: Sequence[Any], args: Sequence[Any]
    ) -> Any:
        """The script's reply, once `replicas` replicas have its writes (or without them: see above)."""
        if time.monotonic() < self.degraded_until:
            return await script(keys=keys, args=args)
        result, acknowledged = await self._send(redis, script, keys, args)
        if isinstance(result, NoScriptError):
            # a Redis that has not seen it (a new primary, a restart): load it, and send it again
            await redis.script_load(script.script)
            result, acknowledged = await self._send(redis, script, keys, args)
        for reply in (result, acknowledged):
            if isinstance(reply, Exception):
                raise reply
        if int(acknowledged) < self.replicas:
            self._degrade(name, int(acknowledged))
        elif self.degraded:
            self.degraded = False
            log.warning("replicas acknowledge writes again (store.replica_acks = %d)", self.replicas)
        return result

    async def _send(
        self, redis: Redis, script: AsyncScript, keys: Sequence[Any], args: Sequence[Any]
    ) -> tuple[Any, Any]:
        """EVALSHA and WAIT in one round trip: a script passed to redis-py's pipeline would cost another
        (SCRIPT EXISTS before every execute), so a missing script comes back as NoScriptError instead."""
        async with redis.pipeline(transaction=False) as pipe:
            pipe.evalsha(script.sha, len(keys), *keys, *args)
            pipe.execute_command("WAIT", self.replicas, self.timeout_ms)
            result, acknowledged = await pipe.execute(raise_on_error=False)
        return result, acknowledged

    def _degrade(self, name: str, acknowledged: int) -> None:
        self.degraded = True
        self.degraded_until = time.monotonic() + DEGRADED_SECONDS
        log.warning(
            "a write of %s reached %d of the %d replicas store.replica_acks asks for within %d ms; writes go "
            "on without waiting for them for %g s: a failover now could lose them",
            name,
            acknowledged,
            self.replicas,
            self.timeout_ms,
            DEGRADED_SECONDS,
        )
