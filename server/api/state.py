"""What the handlers share, built once per process in the app's lifespan."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec

from ..agents.resource import AgentResource
from ..events.log import EventLog
from ..runner.control import Control
from ..runner.create import Creator
from ..search.deleting import Purges
from ..search.listing import Listing
from ..settings import Settings
from ..store.usage import UsageStore
from ..triggers.resource import TriggerResource
from ..webhooks.dispatch import EventDispatch
from ..webhooks.jwks import Keyring
from ..webhooks.resource import WebhookResource
from .auth import Authenticator


class AppState(msgspec.Struct, kw_only=True):
    settings: Settings
    #: why this process cannot serve now (Runtime.unready), or None
    unready: Callable[[], Awaitable[str | None]]
    auth: Authenticator
    creator: Creator
    control: Control
    events: EventLog
    #: the Webhooks resource (server/webhooks/resource.py)
    webhooks: WebhookResource
    #: queues webhook deliveries (a ping's test delivery)
    webhook_events: EventDispatch
    #: the keys of webhook_config deliveries (GET /.well-known/jwks.json)
    keyring: Keyring
    #: the Agents resource (server/agents/resource.py)
    agents: AgentResource
    #: the Triggers resource (server/triggers/resource.py)
    triggers: TriggerResource
    #: lists of stored interactions, and deletes by filter (server/search/)
    listing: Listing
    purges: Purges
    #: what tenants used, day by day (GET /{v}/usage)
    usage: UsageStore
