"""The store's clients on a Redis Cluster (REDIS_URL=redis+cluster://…), and what a moving slot means.

Every key of a tenant carries the tenant as its hash tag (store/keys.py), so each script runs on the one
node that serves that tenant's slot (direct_cluster.py sends them). The scripts also read and write keys
they are not given (a chain's ancestors, the search indexes), which is safe while a slot stays put, and not
while it moves: the node importing a slot would run a script redirected to it (ASK) against half the
tenant's keys (a parent not moved yet reads as missing; an index written there collides with the one still
to be moved). So a script is never followed to a slot's new node before the move completes: one refused by
a moving slot (ASK, TRYAGAIN: it did not run) waits for the move, for up to half of the command's time
bound (a small tenant's slot moves in milliseconds), then is SlotMoving, an outage the caller answers with
503 and a retry. Plain commands (a record read, a followed log) name every key they touch, so redis-py's
client below follows ASK for them as usual.

A Cluster that cannot serve (a node failed and `cluster-require-full-coverage yes`, Redis's default, has
every node answer CLUSTERDOWN until the failover ends) is an outage too, however it shows: CLUSTERDOWN
itself, a slot map that does not cover every slot, or no node answering when the client reads the map
again (ClusterUnavailable).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any, cast

from redis._parsers import AsyncCommandsParser
from redis.asyncio import Redis
from redis.asyncio.cluster import ClusterNode, NodesManager, RedisCluster
from redis.asyncio.connection import Connection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisClusterException
from redis.exceptions import TimeoutError as RedisTimeoutError

from .redis_urls import ClusterNodes

#: what a script that began on a slot's old node hears when it reaches a key already moved (its writes
#: before it stand: the scripts that can meet this only remove what a retry removes again)
MOVED_MIDWAY = ("non local key", "undeclared keys were accessed during rehashing")


class SlotMoving(RedisConnectionError):
    """The tenant's slot is being moved to another node: try again in a moment."""


class ClusterUnavailable(RedisConnectionError):
    """The Cluster's slot map could not be read whole (no node answered, or some slot is not served)."""


class ConnectionCut(RedisConnectionError):
    """A command's connection was closed under it by another task (NodeConnection)."""


class NodeConnection(Connection):
    """A connection to a Cluster node that, closed by another task while it sends a command, fails that
    command with a ConnectionError (redis-py tries it again on a new map, else it is an outage). redis-py
    (5.x) closes every node's connections when it reads the map again, after any connection error (a node
    failing over), those in use too: the write then raised a RuntimeError (uvloop: "the handler is
    closed") or an AttributeError (no writer any more), which were 500s and failed jobs."""

    #: the task that first closed the connection since it began to connect last
    closer: asyncio.Task[Any] | None = None

    async def connect(self) -> None:
        if not self.is_connected:
            # a close that begins while it connects is of the new socket, and counts
            self.closer = None
        await super().connect()  # type: ignore[no-untyped-call]

    async def disconnect(self, nowait: bool = False) -> None:
        if self.closer is None:
            self.closer = asyncio.current_task()
        await super().disconnect(nowait)

    async def send_packed_command(
        self, command: bytes | str | Iterable[bytes], check_health: bool = True
    ) -> None:
        try:
            await super().send_packed_command(command, check_health)
        except (RuntimeError, AttributeError) as exc:
            # closed by another task (one that began closing it before this command was sent counts)
            if self.closer in (None, asyncio.current_task()):
                raise
            raise ConnectionCut(f"{self._host_error()}: the connection was closed under a command") from exc


class CommandTable(AsyncCommandsParser):
    """redis-py's table of where each command's keys are (COMMAND), read from a node that answers.
    redis-py reads it again on every new read of the slot map (after any connection error), from the first
    primary of the map, and asks that node for the keys of the commands the table does not place (XREAD):
    when that primary is the node that just died, until its replica is promoted, every command failed,
    those of tenants whose nodes never failed too."""

    def __init__(self, nodes: NodesManager) -> None:
        super().__init__()
        self.nodes = nodes

    async def initialize(self, node: ClusterNode | None = None) -> None:
        first = node or getattr(self, "node", None)
        others = [other for other in self.nodes.nodes_cache.values() if other is not first]
        failure: Exception | None = None
        for candidate in [first, *others] if first else others:
            try:
                return await super().initialize(candidate)
            except (RedisConnectionError, RedisTimeoutError) as exc:
                failure = exc
        raise failure or ClusterUnavailable("no Cluster node to read the command table from")


class BoundedCluster(RedisCluster):
    """A Cluster client whose commands end within `bound` seconds, redirections included."""

    bound: float = 2.0

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        async with asyncio.timeout(self.bound):
            return await super().execute_command(*args, **kwargs)

    async def initialize(self) -> RedisCluster:
        # redis-py raises its RedisClusterException, the class of its usage errors too, for a map it could
        # not read (every node down, slots not covered, nodes that disagree): here, all outages
        try:
            return await super().initialize()
        except RedisClusterException as exc:
            raise ClusterUnavailable(f"the Cluster's slot map could not be read ({exc})") from exc


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
    # the nodes redis-py makes from the map connect with these (the startup nodes were made already)
    client.connection_kwargs["connection_class"] = NodeConnection
    for node in client.nodes_manager.startup_nodes.values():
        node.connection_class = NodeConnection
    client.commands_parser = CommandTable(client.nodes_manager)
    return cast(Redis, client)
