"""The write that ends a run, retried through a Redis outage: a run that has its whole answer keeps it.

An outage (Redis stopped, frozen or failing over) that met the last write of a run used to end the run with
an exception; its lease lapsed and the reaper stored it failed with only what had been flushed before: an
answer made, and paid for, upstream was thrown away. Now the write is retried, for as long as the run's
lease would have kept it and as long again (the reaper gives a run whose lease ran out during an outage that
long to renew it). Every try is safe to repeat: it carries the run's fence (a run taken over meanwhile is
refused) and a deadline (store/deadlines.py: a try that timed out never lands later). A try whose reply was
lost after it was applied is recognised by what the next try finds (`landed`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..store.outage import UNAVAILABLE, Outage

log = logging.getLogger(__name__)

_FIRST_PAUSE = 0.05
_LONGEST_PAUSE = 1.0


async def through_outage(
    write: Callable[[], Awaitable[Any]],
    *,
    seconds: float,
    landed: Callable[[Exception], bool],
    outage: Outage | None,
    what: str,
) -> None:
    """`write` until Redis takes it, for up to `seconds`; then its outage is raised. `landed`: whether an
    error of a later try says that an earlier one was applied (its reply lost); any other error is raised."""
    give_up = time.monotonic() + seconds
    pause = _FIRST_PAUSE
    tries = 0
    while True:
        tries += 1
        try:
            await write()
        except UNAVAILABLE as exc:
            if outage is not None:
                outage.failed(what, exc)
            if time.monotonic() + pause > give_up:
                raise
            await asyncio.sleep(pause)
            pause = min(pause * 2, _LONGEST_PAUSE)
            continue
        except Exception as exc:
            if tries == 1 or not landed(exc):
                raise
        if tries > 1:
            if outage is not None:
                outage.answered()
            log.info("%s written after %d tries", what, tries)
        return
