"""The sweep: a trigger whose fire job was lost fires again, whether or not anyone reads it.

A trigger's next time is one job, due then (firing.py). A Redis that loses its last writes (a failover
without `replica_acks`, a queue's Redis restarted from a file a second old) can lose that job, and the
trigger would fire no more: a read of it queues the job again (resource.py), and so does this sweep, for
the triggers nobody reads. Each time a fire job is queued, its time is noted in one index of every
tenant's triggers (keys.TRIGGER_TIMES); every `[triggers] missed_after_seconds`, each process asks it for
the triggers noted at a time more than twice that long past (one command, whatever the number of
triggers, when none is) and, for each, queues the job of its next time again (nothing if it is queued
still: all workers down, say) and notes it as looked at now, so that it is looked at again a period later
if that job is lost too. Its fire then records the times missed, as any late fire does. A note of a
trigger paused, in error or gone is dropped; one whose next time is not past is moved to it.
"""

from __future__ import annotations

from ..sections import TriggerSettings
from ..store.commands import now_ms
from ..store.store import Store
from .firing import Firing

#: the most triggers one pass looks at (the next pass, a period later, takes the rest)
_AT_ONCE = 100


class Sweep:
    def __init__(self, store: Store, firing: Firing, settings: TriggerSettings) -> None:
        self.store = store
        self.firing = firing
        #: how long past its time a trigger's job counts as lost (reads use the same: resource.py)
        self.overdue_ms = 2 * settings.missed_after_seconds * 1000

    async def sweep_once(self) -> int:
        """One pass; returns how many triggers it looked at."""
        now = now_ms()
        found = await self.store.triggers.overdue(now - self.overdue_ms, _AT_ONCE)
        for tenant, trigger_id in found:
            record = await self.store.triggers.get(tenant, trigger_id)
            if record is None or record.status != "active" or record.next_ms is None:
                # gone, or fires no more until resumed (which queues its next time, and notes it)
                await self.store.triggers.unindex(tenant, trigger_id)
            elif record.next_ms >= now - self.overdue_ms:
                # its note was older than its next time (that note's write lost): its job is not late
                await self.store.triggers.index(tenant, trigger_id, record.next_ms)
            else:
                await self.firing.queue(tenant, trigger_id, record.next_ms)
                await self.store.triggers.index(tenant, trigger_id, now)
        return len(found)
