"""Liveness and readiness probes."""

from __future__ import annotations

import asyncio
from typing import Any

from litestar import Request, Response, get

from .state import AppState


@get("/healthz")
async def healthz() -> Response[bytes]:
    return Response(content=b'{"status":"ok"}', media_type="application/json")


@get("/readyz")
async def readyz(request: Request[Any, Any, Any]) -> Response[bytes]:
    state: AppState = request.app.state.ix
    try:
        async with asyncio.timeout(2):
            await state.redis.ping()
    except Exception:
        return Response(
            content=b'{"status":"redis unreachable"}', status_code=503, media_type="application/json"
        )
    return Response(content=b'{"status":"ready"}', media_type="application/json")


HANDLERS = [healthz, readyz]
