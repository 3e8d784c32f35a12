"""What the use cases share: the collaborators the composition root (server/runtime.py) builds once."""

from __future__ import annotations

from dataclasses import dataclass

from ..events.log import EventLog
from ..events.writer import LogWriter
from ..limits.quota import Quota
from ..settings import Settings
from ..store.store import Store
from ..upstream.routing import Router
from .histories import Histories
from .registry import RunRegistry
from .run import Runner
from .settle import Settler


@dataclass(frozen=True, slots=True)
class Services:
    settings: Settings
    store: Store
    #: model and agent names -> backends
    router: Router
    #: the runs of this process, for a cancel to stop
    registry: RunRegistry
    runner: Runner
    #: the event-log writer of this process
    writer: LogWriter
    histories: Histories
    settler: Settler
    #: the event-log reader
    events: EventLog
    #: the server keys that seal secrets at rest (webhooks, MCP headers), current first
    server_keys: list[bytes]
    #: the tenants' limits: a create admitted, a run's token budget
    quota: Quota


class UseCase:
    """A use case of the application layer: the shared collaborators, unpacked once."""

    def __init__(self, services: Services) -> None:
        self.settings = services.settings
        self.store = services.store
        self.router = services.router
        self.registry = services.registry
        self.runner = services.runner
        self.writer = services.writer
        self.histories = services.histories
        self.settler = services.settler
        self.events = services.events
        self.server_keys = services.server_keys
        self.quota = services.quota
