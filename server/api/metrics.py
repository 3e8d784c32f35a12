"""`GET /metrics`: the Prometheus scrape on the API's port (README, "Metrics").

Every web process answers it with the same sum: the values of all processes that write to the launcher's
PROMETHEUS_MULTIPROC_DIR (observability/export.py), and the queue's depth read from Redis as it is asked.
No API key is needed, as for /healthz: move it to a port of its own (`[metrics] port`) to keep it off a
public listener. The OpenAPI document describes it when it is served here (openapi/paths.py).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, cast

from litestar import Request, Response, get
from litestar.handlers import HTTPRouteHandler
from redis.asyncio import Redis

from ..observability import export, metrics
from ..settings import MetricsSettings
from ..store.outage import UNAVAILABLE


class Scrape:
    """One process's scrape: the registry to read and the queue whose depth it reports."""

    def __init__(self, redis: Redis, queue_name: str) -> None:
        self.redis = redis
        self.queue_name = queue_name
        #: the depth read for the scrape under way (the render right after the read is synchronous)
        self.depth: int | None = None
        self.registry = export.registry(export.QueueDepth(lambda: self.depth))

    async def render(self) -> bytes:
        try:
            self.depth = await cast("Awaitable[int]", self.redis.zcard(self.queue_name))
        except UNAVAILABLE:
            # the scrape still answers, without the depth (a gap in the graph, not a false zero)
            self.depth = None
            metrics.redis_failed("metrics queue depth")
        return export.render(self.registry)


@get("/metrics")
async def scrape(request: Request[Any, Any, Any]) -> Response[bytes]:
    found: Scrape = request.app.state.ix_scrape
    return Response(content=await found.render(), media_type=export.CONTENT_TYPE)


def on_api_port(settings: MetricsSettings) -> bool:
    """/metrics is answered on the API's port: metrics on, and no port of their own."""
    return settings.enabled and settings.port == 0


def handlers(settings: MetricsSettings) -> list[HTTPRouteHandler]:
    """The route on the API's port: none when metrics are off or served on a port of their own."""
    return [scrape] if on_api_port(settings) else []
