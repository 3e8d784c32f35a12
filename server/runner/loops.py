"""The background loops of a process (event-log writer, reaper, broadcast listener, worker poll loop),
supervised alike: a Redis outage is said once (store/outage.py) and retried quietly, a bug is logged with
its traceback and retried, and only a cancel ends the loop."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from ..store.outage import UNAVAILABLE, Outage

log = logging.getLogger(__name__)


async def supervise(
    name: str,
    step: Callable[[], Awaitable[object]],
    outage: Outage,
    *,
    pause: float,
    on_failure: Callable[[], object] | None = None,
) -> None:
    """Run `step` for ever, `pause` seconds apart; after a failure too (then `on_failure` runs first)."""
    while True:
        try:
            await step()
        except asyncio.CancelledError:
            raise
        except UNAVAILABLE as exc:
            outage.failed(name, exc)
            if on_failure is not None:
                on_failure()
        except Exception:
            log.exception("%s failed; again in %.1f s", name, pause)
            if on_failure is not None:
                on_failure()
        await asyncio.sleep(pause)
