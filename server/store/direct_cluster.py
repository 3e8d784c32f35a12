"""The scripts' pipelined client on a Redis Cluster: one DirectRedis (direct.py) per primary, each script
sent to the node that serves its first key's slot.

redis-py's Cluster client doubled the web process's CPU per create (bench scenario 14), for the reasons
direct.py gives for the single-node client. The slot map comes from CLUSTER SLOTS and is read again after
a MOVED (the slot has a new owner) or a lost node. A moving slot is handled as store/cluster.py does: a
script refused by it (ASK, TRYAGAIN: it did not run) waits for the move for up to half the bound, then is
SlotMoving, a 503; one that met a moved key midway is SlotMoving at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from redis.crc import key_slot
from redis.exceptions import ResponseError, TryAgainError

from .cluster import MOVED_MIDWAY, SlotMoving
from .direct import DirectRedis
from .redis_urls import ClusterNodes

#: MOVED answers followed before giving up, and how often a script refused by a moving slot is tried again
_REDIRECTS = 3
_MOVE_POLL_SECONDS = 0.05


class DirectCluster:
    def __init__(self, nodes: ClusterNodes, *, bound: float, connect_timeout: float) -> None:
        self.startup = [f"{host}:{port}" for host, port in nodes.nodes]
        self.password = nodes.password
        self.bound = bound
        self.connect_timeout = connect_timeout
        self.clients: dict[str, DirectRedis] = {}
        #: the address serving each slot, once read
        self.slots: list[str] | None = None
        self.reading: asyncio.Task[list[str]] | None = None

    async def evalsha(self, sha: str, script: bytes, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        """EVALSHA on the node of the first key's slot (the scripts' keys share a slot)."""
        slot = key_slot(keys[0].encode() if isinstance(keys[0], str) else keys[0])
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.bound / 2
        redirects = 0
        while True:
            address = (await self._map())[slot]
            try:
                return await self._client(address).evalsha(sha, script, keys, args)
            except ResponseError as exc:
                # MOVED and ASK keep their code in the message; TRYAGAIN is read as its class (direct.py)
                kind = "TRYAGAIN" if isinstance(exc, TryAgainError) else str(exc).partition(" ")[0]
                if kind == "MOVED" and redirects < _REDIRECTS:
                    redirects += 1
                    self.slots = None
                elif kind in ("ASK", "TRYAGAIN") and loop.time() < deadline:
                    await asyncio.sleep(_MOVE_POLL_SECONDS)
                elif kind in ("MOVED", "ASK", "TRYAGAIN") or any(w in str(exc) for w in MOVED_MIDWAY):
                    raise SlotMoving(f"a slot is moving between Cluster nodes ({exc})") from exc
                else:
                    raise
            except (ConnectionError, TimeoutError):
                # the node may be gone (a failover): the map is read again on the next script
                self.slots = None
                raise

    def _client(self, address: str) -> DirectRedis:
        client = self.clients.get(address)
        if client is None:
            auth = f":{self.password}@" if self.password else ""
            client = DirectRedis(
                f"redis://{auth}{address}/0", bound=self.bound, connect_timeout=self.connect_timeout
            )
            self.clients[address] = client
        return client

    async def _map(self) -> list[str]:
        if self.slots is not None:
            return self.slots
        if self.reading is None:
            self.reading = asyncio.ensure_future(self._read_map())
        reading = self.reading
        try:
            self.slots = await asyncio.shield(reading)
        finally:
            if self.reading is reading and reading.done():
                self.reading = None
        return self.slots

    async def _read_map(self) -> list[str]:
        """CLUSTER SLOTS from the first node that answers: the nodes known (the map's, then the URL's)."""
        failure: BaseException | None = None
        for address in dict.fromkeys([*self.clients, *self.startup]):
            try:
                reply = await self._client(address).execute("CLUSTER", "SLOTS")
            except (ConnectionError, TimeoutError, ResponseError) as exc:
                failure = exc
                continue
            slots = [""] * 16384
            for start, end, primary, *_replicas in reply:
                host = primary[0].decode() if isinstance(primary[0], bytes) else str(primary[0])
                slots[start : end + 1] = [f"{host}:{primary[1]}"] * (end + 1 - start)
            if "" not in slots:
                return slots
            failure = ConnectionError("the Cluster does not serve every slot")
        raise ConnectionError(f"no Cluster node gave its slot map ({failure})")

    async def aclose(self) -> None:
        if self.reading is not None:
            self.reading.cancel()
        for client in self.clients.values():
            await client.aclose()
