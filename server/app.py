"""create_app(): the litestar application, with one Runtime per process in its lifespan."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import AsyncIterator

from litestar import Litestar
from litestar.types import ControllerRouterHandler

from . import settings as settings_module
from .api import (
    agents,
    docs,
    generate,
    health,
    interactions,
    openapi,
    playground,
    search,
    triggers,
    webhooks,
)
from .api import metrics as metrics_api
from .api import models as models_api
from .api import usage as usage_api
from .api.auth import Authenticator
from .api.errors import EXCEPTION_HANDLERS
from .api.openai import chat as openai_chat
from .api.openai import chat_stored as openai_chat_stored
from .api.openai import errors as openai_errors
from .api.openai import models as openai_models
from .api.openai import responses as openai_responses
from .api.state import AppState
from .launch import orphans
from .observability import metrics
from .observability.requests import RequestObserver
from .runner.handle import DISCONNECTED
from .runtime import Runtime
from .settings import Settings
from .worker_host import WorkerHost


def _app_state(settings: Settings, runtime: Runtime) -> AppState:
    """What the handlers share, from the process's runtime."""
    return AppState(
        settings=settings,
        unready=runtime.unready,
        auth=Authenticator(settings.auth),
        creator=runtime.creator,
        control=runtime.control,
        events=runtime.events,
        webhooks=runtime.webhooks,
        webhook_events=runtime.webhook_events,
        keyring=runtime.keyring,
        agents=runtime.agents,
        triggers=runtime.triggers,
        listing=runtime.listing,
        purges=runtime.purges,
        usage=runtime.store.usage,
    )


def _handlers(settings: Settings) -> list[ControllerRouterHandler]:
    """Every route: Google's resources, the server's own pages, and OpenAI's dialects on a router whose
    errors are in OpenAI's envelope."""
    return [
        *interactions.HANDLERS,
        *search.HANDLERS,
        *usage_api.HANDLERS,
        *webhooks.HANDLERS,
        *agents.HANDLERS,
        *triggers.HANDLERS,
        *models_api.HANDLERS,
        *generate.HANDLERS,
        *health.HANDLERS,
        openapi.document,
        *docs.HANDLERS,
        *playground.HANDLERS,
        *metrics_api.handlers(settings.metrics),
        openai_errors.router(
            [
                *openai_models.HANDLERS,
                *openai_responses.HANDLERS,
                *openai_chat.HANDLERS,
                *openai_chat_stored.HANDLERS,
            ]
        ),
    ]


def create_app(settings: Settings | None = None) -> Litestar:
    settings = settings or settings_module.load()

    @contextlib.asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        orphans.die_with_launcher()
        metrics.start(settings.metrics.enabled, [(route.match, route.backend) for route in settings.models])
        runtime = await Runtime.open(settings)
        host = None
        if settings.worker.embedded:
            host = WorkerHost(runtime)
            await host.start()
        # everything built so far lives as long as the process: keep it out of the collector's full passes
        gc.freeze()
        app.state.ix = _app_state(settings, runtime)
        app.state.ix_scrape = metrics_api.Scrape(runtime.store.queue.redis, settings.worker.queue_name)
        try:
            yield
        finally:
            try:
                if host is not None:
                    await host.stop()
                # the clients of this process's foreground runs are being disconnected: settle the runs
                await runtime.registry.stop_all(DISCONNECTED, grace=5.0)
                await runtime.close()
            finally:
                # the access lines still waiting for their batch
                observer.flush()
                # the metrics still in this process's buffers, then its live gauges stop counting
                metrics.stop()

    app = Litestar(
        route_handlers=_handlers(settings),
        lifespan=[lifespan],
        exception_handlers=EXCEPTION_HANDLERS,
        openapi_config=None,
        request_max_body_size=None,
        debug=False,
        # litestar's default would put its own handler on the root logger, replacing the one process-wide
        # format (server/observability/logs.py); its loggers reach ours through the root
        logging_config=None,
    )
    # around litestar's router and exception handling, not in `middleware=[...]`: litestar runs those per
    # route, so a 404 of the router would get no request id and no access line
    observer = RequestObserver(app.asgi_handler, access=settings.log.access)
    app.asgi_handler = observer
    return app
