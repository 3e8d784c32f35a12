"""The Lua scripts in scripts/*.lua, called by EVALSHA (their source sent once when Redis lacks them).

Every script starts with `_deadline.lua`, which takes its first argument: the time after which it must not
write (store/deadlines.py), added here to each call. Files whose names start with `_` are helpers,
prepended to the scripts that use them: `_moves.lua` reads
the lifecycle table's moves a script is given, `_walk.lua` follows a chain, `_notify.lua` queues the job
that tells an interaction's webhooks of its end, `_index.lua` keeps the search indexes, `_turns.lua` gives a
queued job its turn among its tenant's, `_take.lua` takes one.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from typing import Any

from redis.asyncio import Redis
from redis.commands.core import AsyncScript
from redis.exceptions import ResponseError

from ..observability import spans
from .deadlines import Deadlines, LateWrite, is_late
from .direct import DirectRedis, sha1
from .direct_cluster import DirectCluster
from .replica_acks import ReplicaGate

#: the helpers each script starts with
_PRELUDES: dict[str, tuple[str, ...]] = {
    "create": ("_moves", "_index", "_body", "_stored", "_walk", "_turns", "_notify", "_usage"),
    "claim": ("_moves",),
    "append": ("_moves",),
    "finish": ("_moves", "_body", "_turns", "_notify", "_usage"),
    "cancel": ("_moves",),
    "requeue": ("_moves",),
    "reap": (),
    "set_input": ("_body",),
    "set_remote": ("_moves",),
    "read": ("_body",),
    "delete": ("_moves", "_index", "_body", "_stored"),
    "search": ("_moves", "_index", "_body"),
    "wake": ("_turns",),
    "wake_again": ("_turns",),
    "wake_turn": ("_turns",),
    "take": ("_take",),
    "take_turn": ("_take",),
    "due": ("_turns",),
    "ready": (),
    "install_signing_key": (),
    "webhook_create": (),
    "webhook_write": (),
    "webhook_delete": (),
    "webhook_read": (),
    "webhook_outcome": (),
    "agent_create": (),
    "agent_delete": (),
    "deletion_write": (),
    "trigger_create": (),
    "trigger_update": (),
    "trigger_delete": (),
    "trigger_fire": (),
    "trigger_started": (),
    "trigger_settle": (),
    "usage_add": ("_usage",),
    "limits": ("_moves",),
}


#: scripts that change nothing a failover could lose, or a caller was told of (a search only drops ids of
#: expired interactions): they wait for no replica and carry no deadline
_READS = frozenset({"read", "ready", "search", "webhook_read"})


def _read(name: str) -> str:
    return resources.files(__package__).joinpath("scripts", f"{name}.lua").read_text()


def source(name: str) -> str:
    return "\n".join([_read("_deadline"), *(_read(helper) for helper in _PRELUDES[name]), _read(name)])


class Script:
    """One Lua script, called as `await script(keys=[...], args=[...])`.

    EVALSHA on the store's pipelined client (direct.py; a Cluster's: direct_cluster.py), its source sent
    once when Redis does not know it; on redis-py's client when there is none (a TLS URL). With tracing
    on, each call is a span of the trace it is made in; off, no span is made. A writing script carries
    its deadline (`deadlines`; None: none), and one Redis ran too late raises LateWrite, an outage."""

    __slots__ = ("deadlines", "direct", "fallback", "gate", "name", "redis", "sha", "source", "traced")

    def __init__(
        self,
        name: str,
        redis: Redis,
        direct: DirectRedis | DirectCluster | None,
        *,
        traced: bool,
        gate: ReplicaGate | None,
        deadlines: Deadlines | None,
    ) -> None:
        self.name = name
        self.redis = redis
        #: the writes wait for replicas (store.replica_acks)
        self.gate = None if name in _READS else gate
        self.deadlines = None if name in _READS else deadlines
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
        deadlines = self.deadlines
        try:
            return await self._send(keys, [deadlines.next() if deadlines else "", *args])
        except ResponseError as exc:
            if not is_late(exc):
                raise
            assert deadlines is not None
            # answered while its caller still waited: this process's idea of Redis's clock may be off
            deadlines.recalibrate()
            raise LateWrite(f"Redis ran {self.name} after its deadline, and it wrote nothing") from None

    async def _send(self, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        if self.direct is not None:
            return await self.direct.evalsha(self.sha, self.source, keys, args)
        assert self.fallback is not None
        if self.gate is not None:
            return await self.gate.write(self.redis, self.fallback, self.name, keys, args)
        return await self.fallback(keys=keys, args=args)


class Scripts:
    __slots__ = (
        "agent_create",
        "agent_delete",
        "append",
        "cancel",
        "claim",
        "create",
        "delete",
        "deletion_write",
        "due",
        "finish",
        "install_signing_key",
        "limits",
        "read",
        "ready",
        "reap",
        "requeue",
        "search",
        "set_input",
        "set_remote",
        "take",
        "take_turn",
        "trigger_create",
        "trigger_delete",
        "trigger_fire",
        "trigger_settle",
        "trigger_started",
        "trigger_update",
        "usage_add",
        "wake",
        "wake_again",
        "wake_turn",
        "webhook_create",
        "webhook_delete",
        "webhook_outcome",
        "webhook_read",
        "webhook_write",
    )

    def __init__(
        self,
        redis: Redis,
        direct: DirectRedis | DirectCluster | None = None,
        gate: ReplicaGate | None = None,
        deadlines: Deadlines | None = None,
    ) -> None:
        """`gate`: the writing scripts wait for replicas (no `direct` client then: a WAIT would hold every
        request pipelined on its connection); `deadlines`: their write deadlines (None: none)."""
        traced = spans.on()
        assert direct is None or gate is None

        def register(name: str) -> Script:
            return Script(name, redis, direct, traced=traced, gate=gate, deadlines=deadlines)

        self.create = register("create")
        self.claim = register("claim")
        self.append = register("append")
        self.finish = register("finish")
        self.cancel = register("cancel")
        self.reap = register("reap")
        self.read = register("read")
        self.requeue = register("requeue")
        self.set_input = register("set_input")
        self.set_remote = register("set_remote")
        self.delete = register("delete")
        self.search = register("search")
        self.wake = register("wake")
        self.wake_again = register("wake_again")
        self.wake_turn = register("wake_turn")
        self.take = register("take")
        self.take_turn = register("take_turn")
        self.due = register("due")
        self.ready = register("ready")
        self.limits = register("limits")
        self.install_signing_key = register("install_signing_key")
        self.webhook_create = register("webhook_create")
        self.webhook_write = register("webhook_write")
        self.webhook_delete = register("webhook_delete")
        self.webhook_read = register("webhook_read")
        self.webhook_outcome = register("webhook_outcome")
        self.agent_create = register("agent_create")
        self.agent_delete = register("agent_delete")
        self.deletion_write = register("deletion_write")
        self.trigger_create = register("trigger_create")
        self.trigger_update = register("trigger_update")
        self.trigger_delete = register("trigger_delete")
        self.trigger_fire = register("trigger_fire")
        self.trigger_started = register("trigger_started")
        self.trigger_settle = register("trigger_settle")
        self.usage_add = register("usage_add")
