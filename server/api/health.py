"""Liveness and readiness probes."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Response, get

from .state import AppState


@get("/healthz")
async def healthz() -> Response[bytes]:
    return Response(content=b'{"status":"ok"}', media_type="application/json")


@get("/readyz")
async def readyz(request: Request[Any, Any, Any]) -> Response[bytes]:
    """200 when this process can serve, else 503 with the reason: Redis (either client) not answering,
    or no worker consuming the queue."""
    state: AppState = request.app.state.ix
    reason = await state.unready()
    if reason is not None:
        body = msgspec.json.encode({"status": "not ready", "reason": reason})
        return Response(content=body, status_code=503, media_type="application/json")
    return Response(content=b'{"status":"ready"}', media_type="application/json")


HANDLERS = [healthz, readyz]
