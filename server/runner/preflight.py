"""A create's checks before anything is stored or run, in their order: the request's own webhook_config
(a refused URI is a 400), the stored agent it names (merged into it), its MCP servers (checked, and their
headers sealed when it is stored). Each refusal is a 400 naming the field, with nothing written."""

from __future__ import annotations

from ..agents.apply import with_agent
from ..protocol.interaction import CreateRequest
from ..store.agents import AgentRecord
from ..webhooks import config as webhook_config
from ..webhooks.addresses import AllowList
from . import tool_headers
from .services import Services, UseCase
from .tool_checks import check_servers
from .tool_loop import mcp_servers


class Preflight(UseCase):
    def __init__(self, services: Services) -> None:
        super().__init__(services)
        self.webhook_allow = AllowList.parse(services.settings.webhooks.allow)

    async def checked(
        self, tenant: str, request: CreateRequest, warnings: list[str]
    ) -> tuple[CreateRequest, AgentRecord | None, list[str]]:
        """The request as it runs, the agent it names (None: a model), and its warnings."""
        if request.webhook_config is not None:
            warnings = [*warnings, *await self._webhook_warnings(request)]
        request, agent = await with_agent(self.store.agents, tenant, request, self.server_keys)
        if mcp_servers(request.tools):
            await check_servers(request.tools, self.settings.tools, self.webhook_allow, agent=agent)
            if request.store:
                request = tool_headers.seal(request, tenant, self.server_keys[0])
        return request, agent, warnings

    async def _webhook_warnings(self, request: CreateRequest) -> list[str]:
        assert request.webhook_config is not None
        if not request.store:
            return [webhook_config.NOT_STORED]
        return await webhook_config.check(request.webhook_config, self.settings.webhooks, self.webhook_allow)
