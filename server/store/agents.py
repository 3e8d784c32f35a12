"""A tenant's agents, as Redis keeps them (keys.agents, keys.agent).

Records only: validation and the wire shapes are server/agents/. One JSON string per agent, written once
(agents are created and deleted, never changed) and a ZSET of the tenant's ids by creation, which is the
list and its count. Both writes are scripts, so the two never disagree.
"""

from __future__ import annotations

from typing import Any

import msgspec
from redis.asyncio import Redis

from ..protocol.base import dec_hook
from ..protocol.codec import json_encoder
from ..protocol.tools import Tool
from . import keys
from .commands import oldest_first, typed
from .scripts import Scripts


class AgentRecord(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    id: str
    #: when it was created (ms): the list's order
    create_ms: int
    #: the configured model or agent name (config/models.toml, or a built-in one) it runs on
    base_agent: str
    description: str | None = None
    system_instruction: str | None = None
    tools: list[Tool] | None = None
    agent_config: dict[str, Any] | None = None


#: what a create came to
CREATED, AT_LIMIT, TAKEN = 1, 0, -1

_decode = msgspec.json.Decoder(AgentRecord, dec_hook=dec_hook).decode


class Agents:
    def __init__(self, redis: Redis, scripts: Scripts) -> None:
        self.redis = typed(redis)
        self.scripts = scripts

    async def get(self, tenant: str, agent_id: str) -> AgentRecord | None:
        raw = await self.redis.get(keys.agent(tenant, agent_id))
        return None if raw is None else _decode(raw)

    async def many(self, tenant: str, ids: list[str]) -> list[AgentRecord]:
        """The agents of `ids` that still exist, in that order, in one round trip (one slot: MGET)."""
        if not ids:
            return []
        found = await self.redis.mget([keys.agent(tenant, each) for each in ids])
        return [_decode(raw) for raw in found if raw is not None]

    async def page(self, tenant: str, after: tuple[int, str] | None, count: int) -> list[tuple[int, str]]:
        """Up to `count` (creation ms, id) of the tenant's agents, oldest first, after the one given (ids
        created in the same millisecond come in id order)."""
        return await oldest_first(self.redis, keys.agents(tenant), after, count)

    async def create(self, tenant: str, record: AgentRecord, limit: int) -> int:
        """Store a new agent: CREATED, or AT_LIMIT (the tenant has `limit`), or TAKEN (its id exists)."""
        done = await self.scripts.agent_create(
            keys=[keys.agents(tenant), keys.agent(tenant, record.id)],
            args=[record.id, record.create_ms, json_encoder.encode(record), limit],
        )
        return int(done)

    async def delete(self, tenant: str, agent_id: str) -> bool:
        """Remove an agent; False if there was none."""
        existed = await self.scripts.agent_delete(
            keys=[keys.agent(tenant, agent_id), keys.agents(tenant)], args=[agent_id]
        )
        return bool(int(existed))
