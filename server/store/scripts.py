"""The Lua scripts in scripts/*.lua, called by EVALSHA (their source sent once when Redis lacks them).

Files whose names start with `_` are helpers, prepended to the scripts that use them: `_moves.lua` reads
the lifecycle table's moves a script is given, `_walk.lua` follows a chain, `_notify.lua` queues the job
that tells an interaction's webhooks of its end, `_index.lua` keeps the search indexes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from importlib import resources
from typing import Any, NamedTuple

from redis.asyncio import Redis
from redis.commands.core import AsyncScript

from ..observability import spans
from .direct import DirectRedis, sha1

#: the helpers each script starts with
_PRELUDES: dict[str, tuple[str, ...]] = {
    "create": ("_moves", "_index", "_walk", "_notify"),
    "claim": ("_moves",),
    "append": ("_moves",),
    "finish": ("_moves", "_notify"),
    "cancel": ("_moves",),
    "requeue": ("_moves",),
    "reap": (),
    "set_input": (),
    "delete": ("_moves", "_index"),
    "search": ("_moves", "_index"),
    "wake": (),
    "take": (),
    "install_signing_key": (),
    "webhook_create": (),
    "webhook_write": (),
    "webhook_delete": (),
    "webhook_read": (),
    "webhook_outcome": (),
    "agent_create": (),
    "agent_delete": (),
}


#: scripts that change nothing a failover could lose (a search only drops ids of expired interactions)
_READS = frozenset({"search", "webhook_read"})
#: a replica that does not acknowledge is reported at most this often (every write would say it)
_WARN_EVERY_SECONDS = 10.0

log = logging.getLogger(__name__)


class ReplicaAcks(NamedTuple):
    """`[store] replica_acks`: each writing script is followed by WAIT `replicas` `timeout_ms` on its
    connection (WAIT counts the writes of the connection it is sent on)."""

    replicas: int
    timeout_ms: int


def _read(name: str) -> str:
    return resources.files(__package__).joinpath("scripts", f"{name}.lua").read_text()


def source(name: str) -> str:
    return "\n".join([*(_read(helper) for helper in _PRELUDES[name]), _read(name)])


class Script:
    """One Lua script, called as `await script(keys=[...], args=[...])`.

    EVALSHA on the store's pipelined client (direct.py), its source sent once when Redis does not know it;
    on redis-py's client when there is none (a TLS URL). With tracing on, each call is a span of the
    trace it is made in; off, no span is made."""

    __slots__ = ("acks", "direct", "fallback", "name", "redis", "sha", "source", "traced", "warned")

    def __init__(
        self, name: str, redis: Redis, direct: DirectRedis | None, *, traced: bool, acks: ReplicaAcks | None
    ) -> None:
        self.name = name
        self.redis = redis
        self.acks = None if name in _READS else acks
        self.warned = 0.0
        self.source = source(name).encode()
        self.sha = sha1(self.source)
        self.direct = direct
        self.fallback: AsyncScript | None = None if direct is not None else redis.register_script(self.source)
        self.traced = traced

    async def __call__(self, keys: Sequence[Any] = (), args: Sequence[Any] = ()) -> Any:
        if self.traced:
            with spans.script(self.name):
                return await self._call(keys, args)
        return await self._call(keys, args)

    async def _call(self, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        if self.direct is not None:
            return await self.direct.evalsha(self.sha, self.source, keys, args)
        assert self.fallback is not None
        if self.acks is None:
            return await self.fallback(keys=keys, args=args)
        return await self._acknowledged(self.fallback, self.acks, keys, args)

    async def _acknowledged(
        self, script: AsyncScript, acks: ReplicaAcks, keys: Sequence[Any], args: Sequence[Any]
    ) -> Any:
        """The script, then WAIT on the same connection: it answers once `acks.replicas` replicas have
        its writes, or after the timeout; then the write stands (a replica being down must not stop
        writes), and a warning says so."""
        async with self.redis.pipeline(transaction=False) as pipe:
            await script(keys=keys, args=args, client=pipe)
            pipe.execute_command("WAIT", acks.replicas, acks.timeout_ms)
            result, acknowledged = await pipe.execute()
        if int(acknowledged) < acks.replicas and time.monotonic() - self.warned > _WARN_EVERY_SECONDS:
            self.warned = time.monotonic()
            log.warning(
                "a write of %s reached %s of the %d replicas store.replica_acks asks for within %d ms: "
                "a failover now could lose it",
                self.name,
                acknowledged,
                acks.replicas,
                acks.timeout_ms,
            )
        return result


class Scripts:
    __slots__ = (
        "agent_create",
        "agent_delete",
        "append",
        "cancel",
        "claim",
        "create",
        "delete",
        "finish",
        "install_signing_key",
        "reap",
        "requeue",
        "search",
        "set_input",
        "take",
        "wake",
        "webhook_create",
        "webhook_delete",
        "webhook_outcome",
        "webhook_read",
        "webhook_write",
    )

    def __init__(
        self, redis: Redis, direct: DirectRedis | None = None, acks: ReplicaAcks | None = None
    ) -> None:
        """`acks`: wait for replicas after each writing script (no `direct` client then: a WAIT would
        hold every request pipelined on its connection)."""
        traced = spans.on()
        assert direct is None or acks is None

        def register(name: str) -> Script:
            return Script(name, redis, direct, traced=traced, acks=acks)

        self.create = register("create")
        self.claim = register("claim")
        self.append = register("append")
        self.finish = register("finish")
        self.cancel = register("cancel")
        self.reap = register("reap")
        self.requeue = register("requeue")
        self.set_input = register("set_input")
        self.delete = register("delete")
        self.search = register("search")
        self.wake = register("wake")
        self.take = register("take")
        self.install_signing_key = register("install_signing_key")
        self.webhook_create = register("webhook_create")
        self.webhook_write = register("webhook_write")
        self.webhook_delete = register("webhook_delete")
        self.webhook_read = register("webhook_read")
        self.webhook_outcome = register("webhook_outcome")
        self.agent_create = register("agent_create")
        self.agent_delete = register("agent_delete")
