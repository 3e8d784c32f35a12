"""The Agents resource (spec: webhooks-agents-mcp.md §2): create, list, get and delete a tenant's agents.

An agent is written once and never changed (the SDK has no update). Its `base_agent` must route (a model
or agent name of config/models.toml, or a built-in one) when it is created; a route removed later fails
the interactions that name the agent, with the same 400 a request naming that model gets. Its MCP servers
are checked as a create's are (runner/tool_checks.py: names, `allowed_tools`, at most `[tools]
max_servers`, each url one the webhooks' address rules let us call), a 400 naming `tools[i]...` as the
agent's body has it; an interaction naming the agent checks them again (an address refused since, or an
agent stored before this check), and that 400 names `agent.tools[i]...`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from ..backend_kinds import BUILTIN_MODELS
from ..errors import AgentNotFound, InvalidArgument, LimitReached
from ..protocol import paging
from ..sections import ToolSettings
from ..store.agents import AT_LIMIT, TAKEN, AgentRecord, Agents
from ..tools.checks import check_servers
from ..upstream.routing import Router
from ..webhooks.addresses import STRICT, AllowList, Resolver, system_resolver
from . import headers, rules
from .wire import Agent, AgentList, CreateAgent, view

_GLOB = set("*?[")


class AgentResource:
    def __init__(
        self,
        store: Agents,
        router: Router,
        server_keys: Sequence[bytes],
        *,
        max_agents: int = rules.MAX_AGENTS,
        tools: ToolSettings | None = None,
        allow: AllowList = STRICT,
        resolver: Resolver = system_resolver,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.max_agents = max_agents
        #: what an agent's MCP servers are checked by: `[tools]` and `[webhooks] allow`
        self.tools = tools or ToolSettings()
        self.allow = allow
        self.resolver = resolver
        self.store = store
        self.router = router
        #: seal the agents' MCP header values (the first) and open them (any), agents/headers.py
        self.server_keys = list(server_keys)
        self.clock = clock
        #: names an `agent=` already means: a client may not take them as ids
        self.reserved = {*BUILTIN_MODELS, *(r.match for r in router.routes if not _GLOB & set(r.match))}

    def _base_agent(self, value: str | None) -> str:
        if not value:
            raise InvalidArgument(
                "an agent needs a base_agent: a configured model or agent name", "base_agent"
            )
        self.router.resolve(value, "base_agent")
        return value

    async def create(self, tenant: str, body: CreateAgent) -> Agent:
        rules.base_environment(body.base_environment)
        agent_id = rules.chosen_id(body.id, self.reserved)
        await check_servers(body.tools, self.tools, self.allow, self.resolver)
        record = AgentRecord(
            id=agent_id,
            create_ms=int(self.clock() * 1000),
            base_agent=self._base_agent(body.base_agent),
            description=rules.description(body.description),
            system_instruction=body.system_instruction or None,
            tools=headers.sealed(body.tools or None, tenant, agent_id, self.server_keys[0]),
            agent_config=body.agent_config,
        )
        done = await self.store.create(tenant, record, self.max_agents)
        if done == TAKEN:
            raise InvalidArgument(f"an agent {record.id!r} exists already: choose another id", "id")
        if done == AT_LIMIT:
            raise LimitReached(
                f"This API key has {self.max_agents} agents, the most it may have: delete one first"
            )
        return view(record)

    async def get(self, tenant: str, agent_id: str) -> Agent:
        found = await self.store.get(tenant, rules.checked_id(agent_id))
        if found is None:
            raise AgentNotFound(agent_id)
        return view(found)

    async def page(self, tenant: str, page_size: str | None, page_token: str | None) -> AgentList:
        """The tenant's agents, oldest first (by creation), `page_size` at a time."""
        size = paging.page_size(page_size, rules.DEFAULT_PAGE_SIZE, rules.MAX_PAGE_SIZE)
        after = paging.after_token(page_token, rules.is_agent_id)
        # one more than asked: whether there is a next page at all
        found = await self.store.page(tenant, after, size + 1)
        shown, more = found[:size], len(found) > size
        records = await self.store.many(tenant, [agent_id for _, agent_id in shown])
        token = paging.page_token(shown[-1]) if more and shown else None
        return AgentList(agents=[view(each) for each in records], next_page_token=token)

    async def delete(self, tenant: str, agent_id: str) -> None:
        if not await self.store.delete(tenant, rules.checked_id(agent_id)):
            raise AgentNotFound(agent_id)
