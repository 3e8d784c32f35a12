"""The event-log writer of a process: one batched Redis call for all of its runs.

Runs hand their numbered frames to the writer as they make them. Every `flush_interval_ms` (sooner when
many are waiting) the writer sends what is pending for all runs in one script call, which also renews
their leases; every `heartbeat_seconds` it includes every run, so leases stay fresh and a cancel whose
signal was lost is noticed even while an upstream is silent. A thousand slow streams thus cost a few
calls per tick, not a call per token, and no task per run.

A run with a client waiting on its stream (a foreground stream) gets its frames relayed by the writer
once they are in the log, so a client never sees what the log, and so the record, does not hold. Such a
run's frames are written at once (group commit: what arrives during one write goes with the next), so the
relay costs a Redis round trip, not a tick.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from ..errors import StoreConflict
from ..observability import metrics
from ..settings import RunnerSettings
from ..store.outage import UNAVAILABLE, Outage
from ..store.runs import RunBatch, Runs

log = logging.getLogger(__name__)

#: runs in one script call
_RUNS_PER_CALL = 200
#: script calls of one tick under way at once: a heartbeat over 10,000 runs is 50 calls, and one after
#: another, each waiting its turn on a busy loop, they outlasted the lease; at once, they take a few turns
_CALLS_IN_FLIGHT = 8

#: told why a run's write was refused (a cancel, a takeover), or None when the log could not be written
#: for a lease period
OnRefused = Callable[[StoreConflict | None], None]


class LogEntry:
    """A run as the writer knows it."""

    __slots__ = (
        "committed",
        "fence",
        "inflight",
        "interaction_id",
        "listener",
        "on_refused",
        "pending",
        "tenant",
        "written_at",
    )

    def __init__(
        self,
        tenant: str,
        interaction_id: str,
        fence: int,
        on_refused: OnRefused,
        listener: asyncio.Queue[bytes | None] | None,
    ) -> None:
        self.tenant = tenant
        self.interaction_id = interaction_id
        self.fence = fence
        self.on_refused = on_refused
        #: the run's client, who gets each frame once it is written
        self.listener = listener
        #: the seq of the last frame written, and when the log last took this run's write or lease renewal
        self.committed = 0
        self.written_at = time.monotonic()
        self.pending: list[tuple[int, bytes]] = []
        #: the flush that carries this run's last batch, while it is under way
        self.inflight: asyncio.Future[None] | None = None


class LogWriter:
    def __init__(self, runs: Runs, settings: RunnerSettings, outage: Outage) -> None:
        self.runs = runs
        self.outage = outage
        self.interval = settings.flush_interval_ms / 1000
        self.heartbeat = settings.heartbeat_seconds
        self.lease = settings.lease_seconds
        self.early_frames = settings.flush_early_events
        self.entries: set[LogEntry] = set()
        self.dirty: set[LogEntry] = set()
        self.pending_frames = 0
        self.wake = asyncio.Event()
        self.early = asyncio.Event()

    def register(
        self,
        tenant: str,
        interaction_id: str,
        fence: int,
        on_refused: OnRefused,
        listener: asyncio.Queue[bytes | None] | None = None,
    ) -> LogEntry:
        entry = LogEntry(tenant, interaction_id, fence, on_refused, listener)
        self.entries.add(entry)
        return entry

    def add(self, entry: LogEntry, seq: int, frame: bytes) -> None:
        entry.pending.append((seq, frame))
        self.dirty.add(entry)
        self.pending_frames += 1
        self.wake.set()
        if entry.listener is not None or self.pending_frames >= self.early_frames:
            # a client is waiting for it, or the batch is big already: write now
            self.early.set()

    async def release(self, entry: LogEntry) -> list[tuple[int, bytes]]:
        """Stop writing for a run that is settling; return what it has not written yet, in order."""
        self.entries.discard(entry)
        self.dirty.discard(entry)
        while entry.inflight is not None:
            # its previous batch must land first: the log's ids only grow
            await asyncio.shield(entry.inflight)
        return self.release_now(entry)

    def release_now(self, entry: LogEntry) -> list[tuple[int, bytes]]:
        """`release` for a run with no batch under way."""
        assert entry.inflight is None
        self.entries.discard(entry)
        self.dirty.discard(entry)
        pending, entry.pending = entry.pending, []
        self.pending_frames -= len(pending)
        return pending

    async def run(self) -> None:
        last_beat = time.monotonic()
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.0, last_beat + self.heartbeat - time.monotonic())):
                    await self.wake.wait()
            if self.wake.is_set():
                # let a burst gather, unless it is already big
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.interval):
                        await self.early.wait()
            self.wake.clear()
            self.early.clear()
            beat = time.monotonic() - last_beat >= self.heartbeat
            if beat:
                last_beat = time.monotonic()
            batch = list(self.entries) if beat else list(self.dirty)
            self.dirty.clear()
            await self._flush_all(
                [batch[i : i + _RUNS_PER_CALL] for i in range(0, len(batch), _RUNS_PER_CALL)]
            )

    async def _flush_all(self, chunks: list[list[LogEntry]]) -> None:
        """One tick's calls, a few at a time; an outage is reported once for the tick."""
        began = time.monotonic()
        if len(chunks) == 1:
            failures = [await self._flush_reporting(chunks[0])]
        else:
            gate = asyncio.Semaphore(_CALLS_IN_FLIGHT)

            async def one(chunk: list[LogEntry]) -> BaseException | None:
                async with gate:
                    return await self._flush_reporting(chunk)

            failures = await asyncio.gather(*(one(chunk) for chunk in chunks))
        outage = next((exc for exc in failures if exc is not None), None)
        if outage is not None:
            # what was not written stays pending, for the next tick or the settle
            self.outage.failed("event log", outage, began=began)
            self._give_up_waiting_clients()
        elif failures:
            self.outage.answered()

    async def _flush_reporting(self, entries: list[LogEntry]) -> BaseException | None:
        """`_flush`, answering the outage that stopped it (None when Redis answered)."""
        try:
            await self._flush(entries)
        except UNAVAILABLE as exc:
            return exc
        except Exception:
            log.exception("event log flush failed; retrying on the next tick")
        return None

    def _give_up_waiting_clients(self) -> None:
        """A run whose client waits for frames that could not be written for a lease period is stopped:
        its lease is gone by now, and its client is told so instead of waiting on keep-alives."""
        now = time.monotonic()
        for entry in list(self.entries):
            if entry.listener is not None and now - entry.written_at > self.lease:
                entry.on_refused(None)

    async def _flush(self, entries: list[LogEntry]) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        batches: list[tuple[LogEntry, list[tuple[int, bytes]]]] = []
        for entry in entries:
            taken, entry.pending = entry.pending, []
            self.pending_frames -= len(taken)
            entry.inflight = done
            batches.append((entry, taken))
        failed = True
        results: list[StoreConflict | None] = []
        started = time.perf_counter()
        try:
            results = await self.runs.append(
                [RunBatch(e.tenant, e.interaction_id, e.fence, taken) for e, taken in batches]
            )
            failed = False
            metrics.flushed(sum(len(taken) for _e, taken in batches), time.perf_counter() - started)
        finally:
            for index, (entry, taken) in enumerate(batches):
                entry.inflight = None
                if failed:
                    self._put_back(entry, taken)
                    self.dirty.add(entry)
                    continue
                conflict = results[index]
                if conflict is not None:
                    self._put_back(entry, taken)
                    entry.on_refused(conflict)
                    continue
                entry.written_at = time.monotonic()
                if taken:
                    entry.committed = taken[-1][0]
                    if entry.listener is not None:
                        entry.listener.put_nowait(b"".join(frame for _seq, frame in taken))
            done.set_result(None)

    def _put_back(self, entry: LogEntry, taken: list[tuple[int, bytes]]) -> None:
        """Not written: back in front of what came since, for the next flush or the settle."""
        entry.pending[:0] = taken
        self.pending_frames += len(taken)
