"""The composition root: everything a process needs to serve or run interactions, built from the
settings in one place, and torn down again.

Web processes and worker processes build the same runtime: the store (both Redis clients), the backends'
HTTP clients, the use cases, and five background loops: the broadcast listener, the reaper of lost runs,
the sweep of triggers whose fire job was lost, the event-log writer and the watch of server.toml's limits;
and, when the OTEL_* variables name a collector, its tracer.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
from collections.abc import Callable

from .agents.resource import AgentResource
from .events.log import EventLog
from .events.writer import LogWriter
from .limits.quota import Quota
from .limits.table import LimitsTable, Watcher
from .observability import tracing
from .observability import usage as usage_metrics
from .outbound import Outbound
from .runner import signals
from .runner.control import Control
from .runner.create import Creator
from .runner.histories import Histories
from .runner.idempotency import Idempotency
from .runner.jobs import BackgroundJobs
from .runner.loops import supervise
from .runner.reaper import Reaper
from .runner.registry import RunRegistry
from .runner.run import Runner
from .runner.services import Services
from .runner.settle import Settler
from .runner.tool_run import ToolRun
from .search.deleting import Purges
from .search.listing import Listing
from .settings import Settings, load_auth
from .store import heartbeats, keys
from .store.outage import Outage
from .store.store import Store
from .triggers.firing import Firing
from .triggers.outcome import Outcomes
from .triggers.resource import TriggerResource
from .triggers.sweep import Sweep
from .upstream.routing import Router
from .webhooks import server_keys
from .webhooks.addresses import AllowList
from .webhooks.dispatch import EventDispatch
from .webhooks.jwks import Keyring
from .webhooks.resource import WebhookResource
from .webhooks.sending import Sender, issuer

#: the cyclic collector's thresholds (young, middle, old generation). With Python's defaults (700, 10, 10)
#: a full pass runs whenever the tracked objects have grown by a quarter: while 10,000 streams opened, a web
#: process made 15 full passes of up to 1.4 s each (1.6 million objects, nothing freed), long enough for its
#: Redis commands to time out and its runs' leases to lapse. The cycles a request makes die young and are
#: still collected there; old objects (connections, runs, the streams' state) are rarely garbage.
COLLECTOR_THRESHOLDS = (50_000, 20, 100)


def _tune_collector() -> None:
    gc.set_threshold(*COLLECTOR_THRESHOLDS)


class Runtime:
    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store
        self.outage = Outage()
        #: the proxies and trust store of every call out: upstreams, MCP servers, webhook deliveries
        self.outbound = Outbound.from_settings(settings.outbound)
        self.router = Router(settings.models, settings.echo, self.outbound)
        self.registry = RunRegistry()
        self.histories = Histories()
        self.writer = LogWriter(store.runs, settings.runner, self.outage)
        self.events = EventLog(store, settings.runner.keepalive_seconds)
        #: the keys that seal webhook secrets, signing keys and MCP headers at rest, current first
        self.server_keys = server_keys.load(settings)
        allow = AllowList.parse(settings.webhooks.allow)
        tools = ToolRun(settings.tools, allow, self.server_keys, self.outbound)
        #: the tenants' limits, as server.toml says now (a change applies without a restart)
        self.quota = Quota(LimitsTable(settings.auth), store.limits)
        services = Services(
            settings=settings,
            store=store,
            router=self.router,
            registry=self.registry,
            runner=Runner(settings.upstream_retry, tools),
            writer=self.writer,
            histories=self.histories,
            settler=Settler(store),
            events=self.events,
            server_keys=self.server_keys,
            quota=self.quota,
        )
        self.creator = Creator(services, Idempotency(store))
        self.control = Control(services)
        self.jobs = BackgroundJobs(services)
        self.reaper = Reaper(services, self.jobs, self.outage)
        self._webhooks(settings, store)
        self.agents = AgentResource(
            store.agents,
            self.router,
            self.server_keys,
            max_agents=settings.agents.max_agents,
            tools=settings.tools,
            allow=allow,
        )
        self._found_and_scheduled(settings, store)
        self._tasks: list[asyncio.Task[None]] = []

    def _webhooks(self, settings: Settings, store: Store) -> None:
        """The Webhooks resource, and what turns interactions' ends into signed deliveries."""
        hooks = settings.webhooks
        self.keyring = Keyring(
            store.signing_keys,
            self.server_keys,
            overlap_seconds=hooks.secret_overlap_seconds,
            max_age_seconds=hooks.signing_key_max_age_seconds,
        )
        self.webhooks = WebhookResource(store.webhooks, hooks, self.server_keys)
        self.webhook_events = EventDispatch(store)
        self.webhook_sender = Sender(
            store,
            self.webhook_events,
            hooks,
            self.server_keys,
            self.keyring,
            issuer(settings),
            outbound=self.outbound,
        )

    def _found_and_scheduled(self, settings: Settings, store: Store) -> None:
        """Lists and deletes by filter; scheduled interactions (the fire jobs' work and the resource)."""
        self.listing = Listing(store.search)
        self.purges = Purges(store.search, store.interactions, store.deletions, store.jobs)
        #: how an execution ends; the end job of an interaction an execution made settles it
        self.outcomes = Outcomes(store, self.control)
        self.firing = Firing(store, self.creator, self.outcomes, settings.triggers, self.server_keys)
        self.triggers = TriggerResource(store, self.creator, self.outcomes, self.firing, settings.triggers)
        #: a trigger whose fire job was lost (and nobody reads it) fires again
        self.sweep = Sweep(store, self.firing, settings.triggers)

    @classmethod
    async def open(cls, settings: Settings, process: str = "web") -> Runtime:
        """`process`: what this process is (web, worker), for its traces' resource."""
        _tune_collector()
        # in the process itself (a web process starts after granian forked it), before the store's scripts
        tracing.start(process)
        usage_metrics.configure(settings.metrics.usage_by_tenant)
        runtime = cls(settings, await Store.open(settings))
        # a web process with no worker inside says when the queue waits for one (heartbeats.Unconsumed)
        await runtime._start_loops(watch_workers=process == "web" and not settings.worker.embedded)
        return runtime

    async def _start_loops(self, *, watch_workers: bool) -> None:
        listening = asyncio.Event()
        channels: dict[str, Callable[[str], object]] = {
            keys.CANCEL_CHANNEL: self.registry.stop,
            keys.FORGET_CHANNEL: self.histories.forget_tenant,
            # a worker's timer hears of every job queued for later (a web process's has no timer: no-op)
            keys.DUE_CHANNEL: self.store.jobs.heard_due,
        }
        reap = supervise(
            "reaper", self.reaper.reap_once, self.outage, pause=self.settings.runner.reaper_interval_seconds
        )
        every = self.settings.triggers.missed_after_seconds
        sweep = supervise("trigger sweep", self.sweep.sweep_once, self.outage, pause=every)
        self._tasks = [
            asyncio.create_task(
                signals.listen(
                    self.store.queue.redis, channels, listening, self.outage, self.histories.forget_all
                )
            ),
            asyncio.create_task(reap),
            asyncio.create_task(sweep),
            asyncio.create_task(self.writer.run()),
            asyncio.create_task(self._watch_limits()),
        ]
        if watch_workers:
            worker = self.settings.worker
            unconsumed = heartbeats.Unconsumed(
                self.store.queue.redis, worker.queue_name, worker.heartbeat_seconds
            )
            watch = supervise("worker watch", unconsumed.check, self.outage, pause=worker.heartbeat_seconds)
            self._tasks.append(asyncio.create_task(watch))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5):
                await listening.wait()

    async def _watch_limits(self) -> None:
        """server.toml looked at once a second: its changed limits apply at once (limits/table.py)."""
        path = self.settings.config_file
        watcher = Watcher(self.quota.table, path, functools.partial(load_auth, path), self.quota.replace)
        await watcher.run()

    async def unready(self) -> str | None:
        return await self.store.unready()

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.router.aclose()
        await self.store.close()
        # the spans still waiting for their batch
        tracing.shutdown()
