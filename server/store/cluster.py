"""The store's clients on a Redis Cluster (REDIS_URL=redis+cluster://…).

Every key of a tenant carries the tenant as its hash tag (store/keys.py), so each script runs on the one
node that serves that tenant's slot. The scripts also read and write keys they are not given (a chain's
ancestors, the search indexes), which is safe while a slot stays put, and not while it moves: the node
importing a slot would run a script redirected to it (ASK) against half the tenant's keys (a parent not
moved yet reads as missing; an index written there collides with the one still to be moved). So a script
is never followed to a slot's new node before the move completes: an ASK or TRYAGAIN answer is SlotMoving,
an outage the caller answers with 503 and a retry, unless the move ends within half of the command's time
bound (a small tenant's slot moves in milliseconds: its requests only wait). Plain commands (a record
read, a followed log) name every key they touch, so they follow ASK as usual.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from redis.asyncio import Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.exceptions import (
    AskError,
    ClusterDownError,
    MovedError,
    ResponseError,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .redis_urls import ClusterNodes

_SCRIPTS = frozenset({"EVALSHA", "EVAL"})
#: MOVED answers a script may follow (the slot map changed since it was read) before it gives up
_REDIRECTS = 3
#: how often a script refused by a moving slot is tried again
_MOVE_POLL_SECONDS = 0.05


class SlotMoving(RedisConnectionError):
    """The tenant's slot is being moved to another node: try again in a moment."""


#: what a script that began on a slot's old node hears when it reaches a key already moved (its writes
#: before it stand: the scripts that can meet this only remove what a retry removes again)
_MOVED_MIDWAY = ("non local key", "undeclared keys were accessed during rehashing")


class BoundedCluster(RedisCluster):
    """A Cluster client whose commands end within `bound` seconds, and whose scripts stay off a slot
    that is moving (module docstring): they wait for the move to end, for up to half of `bound`."""

    bound: float = 2.0

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        async with asyncio.timeout(self.bound):
            return await super().execute_command(*args, **kwargs)

    async def _execute_command(self, target_node: ClusterNode, *args: Any, **kwargs: Any) -> Any:
        if args[0] not in _SCRIPTS:
            return await super()._execute_command(target_node, *args, **kwargs)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.bound / 2
        while True:
            try:
                return await self._script(target_node, *args, **kwargs)
            except (AskError, TryAgainError) as exc:
                # refused before it ran: it may be sent again
                if loop.time() >= deadline:
                    raise SlotMoving(f"a slot is moving between Cluster nodes ({exc})") from exc
                await asyncio.sleep(_MOVE_POLL_SECONDS)
                target_node = self.nodes_manager.get_node_from_slot(await self._determine_slot(*args))

    async def _script(self, target_node: ClusterNode, *args: Any, **kwargs: Any) -> Any:
        for _ in range(_REDIRECTS):
            try:
                return await target_node.execute_command(*args, **kwargs)
            except MovedError as exc:
                # the answer names the slot's new node: the map is patched from it, as redis-py does
                self.nodes_manager._moved_exception = exc
                slot = await self._determine_slot(*args)
                target_node = self.nodes_manager.get_node_from_slot(slot)
            except ResponseError as exc:
                if any(words in str(exc) for words in _MOVED_MIDWAY):
                    raise SlotMoving(f"a slot moved under a script ({exc})") from exc
                raise
            except (RedisConnectionError, RedisTimeoutError, ClusterDownError, SlotNotCoveredError):
                # as redis-py does: the node may be gone, so the map is read again on the next command
                self.nodes_manager.startup_nodes.pop(target_node.name, None)
                await self.aclose()
                raise
        raise SlotMoving("a script's slot kept moving between Cluster nodes")


def build(nodes: ClusterNodes, *, size: int, connect: float, read: float, bound: float) -> Redis:
    """A client of the cluster; nothing connects until first use. It is typed as the single-node client
    the repositories take: the commands they send have the same signatures on both."""
    client = BoundedCluster(
        startup_nodes=[ClusterNode(host, port) for host, port in nodes.nodes],
        password=nodes.password,
        # per node: redis-py's cluster client fails a command rather than wait for a connection
        max_connections=size,
        socket_connect_timeout=connect,
        socket_timeout=read,
        socket_keepalive=True,
    )
    client.bound = bound
    return cast(Redis, client)
