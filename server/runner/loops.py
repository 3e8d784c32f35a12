"""The background loops of a process (event-log writer, reaper, broadcast listener, worker poll loop),
supervised alike: a Redis outage is said once (store/outage.py) and retried quietly, a bug is logged with
its traceback and retried, and only a cancel ends the loop."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable

from ..store.outage import UNAVAILABLE, Outage

log = logging.getLogger(__name__)

#: a generator of its own: the module's shared one is other code's (Hypothesis, in-process tests, checks
#: that nothing draws from it while it generates)
_draws = random.Random()


def first_pause(seconds: float) -> float:
    """A random part of `seconds` (a twentieth of it at least), for the first pause of a loop that runs
    every `seconds`: processes started together (a deployment, a bench) then run out of step for as long
    as they run, each at its own period (50 idle workers started at once timed out their token waits,
    beat and reaped in the same few milliseconds, and a pickup then waited for a core)."""
    return seconds * _draws.uniform(0.05, 1.0)


async def supervise(
    name: str,
    step: Callable[[], Awaitable[object]],
    outage: Outage,
    *,
    pause: float,
    on_failure: Callable[[], object] | None = None,
) -> None:
    """Run `step` for ever, `pause` seconds apart (the first pause shorter, `first_pause`); after a
    failure too (then `on_failure` runs first)."""
    wait = first_pause(pause)
    while True:
        began = time.monotonic()
        try:
            await step()
        except asyncio.CancelledError:
            raise
        except UNAVAILABLE as exc:
            outage.failed(name, exc, began=began)
            if on_failure is not None:
                on_failure()
        except Exception:
            log.exception("%s failed; again in %.1f s", name, wait)
            if on_failure is not None:
                on_failure()
        await asyncio.sleep(wait)
        wait = pause
