"""The interactions use cases: create (run now or queue), get, cancel, delete, and the background job.

The API and the worker call this; it validates a request against the stored chain, stores it, and hands
runs to the runner.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import msgspec
from redis.asyncio import Redis

from ..events.sse import frame, unavailable_frame
from ..events.writer import LogWriter
from ..protocol import status as st
from ..protocol.codec import InvalidArgument
from ..protocol.events import ErrorEvent, InteractionCompleted, InteractionStatusUpdate
from ..protocol.interaction import (
    CreateRequest,
    ErrorInfo,
    Interaction,
    InteractionConfig,
    is_interaction_id,
)
from ..protocol.steps import Step
from ..settings import Settings
from ..store import keys
from ..store.outage import UNAVAILABLE, Outage
from ..store.records import Output, Record, StoredConfig
from ..store.repository import ChainTooDeep, NewRecord, NotFound, Repository, now_ms
from ..upstream.base import Backend, UpstreamRequest
from ..upstream.routing import Router
from . import assemble, render
from .handle import SHUTDOWN, RunHandle
from .histories import Histories
from .history import fill_function_result_names
from .ids import new_id
from .registry import RunRegistry
from .run import Listener, Runner, RunResult, RunSpec

log = logging.getLogger(__name__)

#: enqueue(tenant, interaction id, fence the job is queued under)
Enqueue = Callable[[str, str, int], Awaitable[None]]

#: how long a repeated Idempotency-Key waits for the first call's answer
_IDEMPOTENT_WAIT_SECONDS = 600.0
#: how long it waits for the first call's record to appear (it is stored milliseconds after the key)
_STORING_SECONDS = 1.0

LOST_WORKER = "The worker running this interaction was lost"
LOST_SERVER = "The server running this interaction was lost"


class Started(msgspec.Struct, kw_only=True):
    """A foreground run: a task that runs it (and the stream of its frames if one was asked for), or, for
    a plain call whose id nobody can know yet, the run itself, for the caller to await."""

    handle: RunHandle
    listener: Listener | None
    task: asyncio.Task[RunResult] | None = None
    inline: Coroutine[Any, Any, RunResult] | None = None

    async def result(self) -> RunResult:
        if self.inline is not None:
            return await self.inline
        assert self.task is not None
        # the run goes on (and settles) even if the caller is cancelled
        return await asyncio.shield(self.task)


class Queued(msgspec.Struct, kw_only=True):
    """A stored interaction not run by this request (background, or a repeated Idempotency-Key)."""

    interaction: Interaction
    tenant: str


class InteractionService:
    def __init__(
        self,
        settings: Settings,
        repository: Repository,
        blocking_redis: Redis,
        router: Router,
        registry: RunRegistry,
        enqueue: Enqueue,
        outage: Outage,
    ) -> None:
        self.settings = settings
        self.outage = outage
        self.repository = repository
        self.blocking_redis = blocking_redis
        self.router = router
        self.registry = registry
        self.enqueue = enqueue
        self.writer = LogWriter(repository, settings.runner, outage)
        self.histories = Histories()
        self.runner = Runner(repository, self.writer, settings.upstream_retry, self.histories)
        self.stateless_runner = Runner(None, None, settings.upstream_retry, None)

    # -- create ----------------------------------------------------------------------------------------

    async def create(
        self,
        tenant: str,
        request: CreateRequest,
        input_steps: list[Step],
        warnings: list[str],
        *,
        idempotency_key: str | None = None,
        body: bytes = b"",
    ) -> Started | Queued:
        config = _config_of(request)
        backend, upstream_model = self._route(config)
        stored = StoredConfig(config=config, input=request.input, warnings=warnings or None)
        created = render.timestamp()
        if not input_steps:
            raise InvalidArgument("`input` is required and must not be empty", "input")
        if not request.store:
            if request.previous_interaction_id:
                raise InvalidArgument(
                    "`store=false` cannot be combined with `previous_interaction_id`",
                    "previous_interaction_id",
                )
            if request.background:
                raise InvalidArgument("`store=false` cannot be combined with `background=true`", "background")
            fill_function_result_names([], input_steps)
            upstream = _upstream_request(config, upstream_model, input_steps)
            backend.check(upstream)
            spec = RunSpec(
                tenant=None,
                interaction_id=None,
                created=created,
                config=stored,
                request=upstream,
                backend=backend,
            )
            return self._start(spec, request.stream, stateless=True)

        interaction_id = new_id()
        prev = request.previous_interaction_id
        if prev is not None and not is_interaction_id(prev):
            # before the key is remembered: a refused create must not leave it pointing at nothing
            raise NotFound(prev)
        if idempotency_key is not None:
            repeated = await self._idempotent(tenant, idempotency_key, interaction_id, body)
            if repeated is not None:
                return repeated
        generation = self.histories.generation(tenant)
        cached = self.histories.get(tenant, prev) if prev else None
        walk = bool(prev) and cached is None
        # A plain foreground call's id is known to nobody until it is answered: its record is written
        # once, finished. Streams, background runs and idempotent creates are stored before they run.
        deferred = not request.background and not request.stream and idempotency_key is None
        try:
            if deferred:
                chain = await self.repository.check_chain(tenant, prev, walk=walk)
            else:
                record = NewRecord(
                    status=st.QUEUED if request.background else st.IN_PROGRESS,
                    created=created,
                    background=request.background,
                    logged=request.background or request.stream,
                    config=stored,
                    input_steps=input_steps,
                )
                chain = await self.repository.create(
                    tenant,
                    interaction_id,
                    record,
                    previous_interaction_id=prev,
                    chain="walk" if walk else "check",
                    claim=not request.background,
                    # watched from now: if its job is lost before a worker takes it, it is queued again
                    pickup_deadline=now_ms() + self._pickup_ms if request.background else None,
                )
        except BaseException:
            if idempotency_key is not None:
                await self.repository.forget_idempotency(tenant, _digest(idempotency_key))
            raise
        if chain.steps is not None and prev:
            self.histories.put(tenant, prev, tuple(chain.steps), generation)
        history = list(cached) if cached is not None else chain.steps or []
        if fill_function_result_names(history, input_steps) and not deferred:
            await self.repository.replace_input(tenant, interaction_id, input_steps)
        upstream = _upstream_request(config, upstream_model, [*history, *input_steps])
        try:
            backend.check(upstream)
        except InvalidArgument as exc:
            if not deferred:
                fence = None if request.background else 1
                await self._fail_unstarted(tenant, interaction_id, str(exc), fence=fence)
            raise
        if request.background:
            await self.enqueue(tenant, interaction_id, 0)
            interaction = render.interaction(
                interaction_id=interaction_id,
                status=st.QUEUED,
                config=stored,
                created=created,
                updated=created,
                previous_interaction_id=prev,
                steps=[],
                warnings=True,
            )
            return Queued(interaction=interaction, tenant=tenant)
        spec = RunSpec(
            tenant=tenant,
            interaction_id=interaction_id,
            fence=1,
            logged=request.stream,
            deferred=deferred,
            chain_expiry=chain.expiry,
            depth=chain.depth,
            generation=generation,
            created=created,
            previous_interaction_id=prev,
            config=stored,
            input_steps=input_steps,
            request=upstream,
            backend=backend,
        )
        return self._start(spec, request.stream, stateless=False)

    def _route(self, config: InteractionConfig) -> tuple[Backend, str]:
        if config.model and config.agent:
            raise InvalidArgument("Give either `model` or `agent`, not both", "agent")
        if config.model:
            return self.router.resolve(config.model, "model")
        if config.agent:
            return self.router.resolve(config.agent, "agent")
        raise InvalidArgument("`model` (or `agent`) is required", "model")

    def _start(self, spec: RunSpec, stream: bool, *, stateless: bool) -> Started:
        member = (
            keys.member(spec.tenant, spec.interaction_id) if spec.tenant and spec.interaction_id else None
        )
        handle = RunHandle(member)
        runner = self.stateless_runner if stateless else self.runner
        if not stream and (stateless or spec.deferred):
            # nothing can address this run but its caller: no task, no registration
            return Started(handle=handle, listener=None, inline=runner.run(spec, handle))
        listener: Listener | None = asyncio.Queue() if stream else None
        task = self.registry.start(handle, runner.run(spec, handle, listener))
        if listener is not None:
            task.add_done_callback(lambda done: _end_stream_on_failure(done, listener))
        return Started(task=task, handle=handle, listener=listener)

    async def _idempotent(self, tenant: str, key: str, interaction_id: str, body: bytes) -> Queued | None:
        body_digest = hashlib.sha256(body).hexdigest()
        known = await self.repository.remember_idempotency(tenant, _digest(key), interaction_id, body_digest)
        if known is None:
            return None
        known_id, known_digest = known
        if known_digest != body_digest:
            raise InvalidArgument(
                "This Idempotency-Key was used with a different request body", "Idempotency-Key"
            )
        loop = asyncio.get_running_loop()
        started = loop.time()
        while True:
            try:
                record = await self.repository.get(tenant, known_id)
            except NotFound:
                record = None
            if record is None and loop.time() - started > _STORING_SECONDS:
                break  # not the first request still storing it: deleted since, or its create failed
            # a repeated foreground call answers like the first one: once it has finished
            waiting = record is None or (not record.background and record.status in st.RUNNING)
            if not waiting or loop.time() - started > _IDEMPOTENT_WAIT_SECONDS:
                break
            await asyncio.sleep(0.05)
        if record is None:
            raise NotFound(known_id)
        return Queued(interaction=render.from_record(record, full_timeline=False), tenant=tenant)

    async def _fail_unstarted(
        self, tenant: str, interaction_id: str, message: str, fence: int | None
    ) -> None:
        """A stored interaction that cannot run at all (the backend refused the request)."""
        await self.repository.finish(
            tenant,
            interaction_id,
            fence=fence,
            expect=st.QUEUED if fence is None else st.IN_PROGRESS,
            status=st.FAILED,
            output=Output(errors=[ErrorInfo(code="invalid_argument", message=message)]),
            updated=render.timestamp(),
            events=[],
        )

    # -- read, cancel, delete --------------------------------------------------------------------------

    async def get(self, tenant: str, interaction_id: str) -> Record:
        return await self.repository.get(tenant, interaction_id)

    async def cancel(self, tenant: str, interaction_id: str) -> Record:
        result = await self.repository.cancel(tenant, interaction_id, render.timestamp())
        if result.outcome == "missing":
            raise NotFound(interaction_id)
        if result.outcome == "status":
            if result.detail == st.CANCELLED:
                return await self._settled(tenant, interaction_id)
            raise InvalidArgument(
                f"Interaction {interaction_id!r} is {result.detail}; only queued or running interactions "
                "can be cancelled",
                "id",
            )
        member = keys.member(tenant, interaction_id)
        acked = False
        if result.detail == st.IN_PROGRESS:
            # the signal went out in the script; a run in this process is stopped without the round trip
            self.registry.stop(member)
            acked = await self.repository.wait_cancel_ack(
                self.blocking_redis, tenant, interaction_id, self.settings.runner.cancel_ack_timeout_seconds
            )
        if not acked:
            await self.settle_without_run(tenant, interaction_id, st.CANCELLED, st.CANCELLED, None)
        return await self.repository.get(tenant, interaction_id)

    async def _settled(self, tenant: str, interaction_id: str) -> Record:
        """A cancelled interaction, once its run has saved its output (or after the cancel's wait)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.runner.cancel_ack_timeout_seconds
        while True:
            record = await self.repository.get(tenant, interaction_id)
            if record.settled or loop.time() > deadline:
                return record
            await asyncio.sleep(0.02)

    async def delete(self, tenant: str, interaction_id: str) -> None:
        status = await self.repository.status(tenant, interaction_id)
        if status is None:
            raise NotFound(interaction_id)
        if status in st.RUNNING:
            await self.repository.cancel(tenant, interaction_id, render.timestamp())
            self.registry.stop(keys.member(tenant, interaction_id))
        await self.repository.delete(tenant, interaction_id)
        # every process drops the histories it holds for this tenant: none may outlive what they contain
        self.histories.forget_tenant(tenant)
        await self.repository.broadcast_forget(tenant)

    async def settle_without_run(
        self, tenant: str, interaction_id: str, expect: str, status: str, error: ErrorInfo | None
    ) -> bool:
        """Settle an interaction no live run holds (cancelled while queued, or its runner was lost). Its
        output is what its event log holds: what its clients saw."""
        try:
            record = await self.repository.get(tenant, interaction_id)
        except NotFound:
            return False
        output = record.output
        if output is None:
            steps: list[Step] = []
            usage = None
            if record.logged:
                steps, usage = assemble.output_of(await self.repository.log_frames(tenant, interaction_id))
            output = Output(steps=steps, usage=usage, errors=[error] if error else None)
        final = render.interaction(
            interaction_id=interaction_id,
            status=status,
            config=record.config,
            created=record.created,
            updated=render.timestamp(),
            previous_interaction_id=record.previous_interaction_id,
            steps=output.steps,
            usage=output.usage,
            errors=output.errors,
        )
        update = InteractionStatusUpdate(interaction_id=interaction_id, status=status)
        last = ErrorEvent(error=error) if error else InteractionCompleted(interaction=final)
        result = await self.repository.finish(
            tenant,
            interaction_id,
            fence=None,
            expect=expect,
            status=status,
            output=output,
            updated=final.updated or render.timestamp(),
            events=[frame(update), frame(last)],
        )
        return result.outcome == "ok"

    # -- background ------------------------------------------------------------------------------------

    async def run_background(self, tenant: str, interaction_id: str, queued_fence: int) -> None:
        """The worker's job. Returns at once if the interaction is finished or the job is stale."""
        claim = await self.repository.claim(tenant, interaction_id, queued_fence)
        if claim.outcome == "exhausted":
            await self.settle_without_run(
                tenant,
                interaction_id,
                st.IN_PROGRESS,
                st.FAILED,
                ErrorInfo(code="worker_lost", message=LOST_WORKER),
            )
            return
        if claim.outcome != "ok":
            return
        generation = self.histories.generation(tenant)
        try:
            record = await self.repository.get(tenant, interaction_id)
            history = await self._history(tenant, record.previous_interaction_id, generation)
            config = record.config.config
            backend, upstream_model = self._route(config)
        except (NotFound, InvalidArgument, ChainTooDeep) as exc:
            await self.settle_without_run(
                tenant, interaction_id, st.IN_PROGRESS, st.FAILED, ErrorInfo(code="failed", message=str(exc))
            )
            return
        spec = RunSpec(
            tenant=tenant,
            interaction_id=interaction_id,
            fence=claim.fence,
            seq=claim.seq,
            logged=True,
            background=True,
            announce=claim.seq == 0,
            created=record.created,
            previous_interaction_id=record.previous_interaction_id,
            config=record.config,
            request=_upstream_request(config, upstream_model, [*history, *record.input_steps]),
            backend=backend,
            generation=generation,
        )
        handle = RunHandle(keys.member(tenant, interaction_id))
        task = self.registry.start(handle, self.runner.run(spec, handle))
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            await self._shut_down(handle, task, tenant, interaction_id, claim.fence)
            raise

    async def _shut_down(
        self, handle: RunHandle, task: asyncio.Task[RunResult], tenant: str, interaction_id: str, fence: int
    ) -> None:
        """The worker is shutting down: stop the run. One that made no output yet goes back to the queue,
        one that did settles as failed with its output (a re-run would repeat it), and one already
        writing its end is let finish."""
        if handle.settling:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.shield(task)
            return
        settled = False
        if not task.done():
            handle.reason = SHUTDOWN
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
                settled = True
        if not settled:
            await self.hand_back(tenant, interaction_id, fence, refund=True)

    async def _history(self, tenant: str, previous_interaction_id: str | None, generation: int) -> list[Step]:
        if not previous_interaction_id:
            return []
        cached = self.histories.get(tenant, previous_interaction_id)
        if cached is not None:
            return list(cached)
        chain = await self.repository.check_chain(tenant, previous_interaction_id, walk=True)
        steps = chain.steps or []
        self.histories.put(tenant, previous_interaction_id, tuple(steps), generation)
        return steps

    @property
    def _pickup_ms(self) -> int:
        """How long a queued job may wait before the reaper looks for it (and then again, while it waits)."""
        return int(self.settings.runner.pickup_seconds * 1000)

    async def hand_back(self, tenant: str, interaction_id: str, fence: int, *, refund: bool) -> bool:
        new_fence = await self.repository.requeue(
            tenant, interaction_id, fence, self._pickup_ms, refund=refund
        )
        if new_fence is None:
            return False
        await self.enqueue(tenant, interaction_id, new_fence)
        return True

    async def reap_once(self) -> int:
        """Look after runs whose lease (or pickup deadline) ran out: a job still waiting in the queue gets
        more time, a lost job is queued again, a lost background run is re-run while it has attempts left,
        a cancel nobody settled is settled, and the rest fail."""
        handled = 0
        due = await self.repository.due_runs()
        self.outage.answered()
        if self.outage.recent(self.settings.runner.lease_seconds):
            # no lease could be renewed while Redis was away: live runs get a lease period to renew theirs
            return 0
        for member in due:
            tenant, interaction_id = keys.split_member(member)
            run = await self.repository.run_state(tenant, interaction_id)
            handled += 1
            if run.status == st.CANCELLED and not run.settled:
                await self.settle_without_run(tenant, interaction_id, st.CANCELLED, st.CANCELLED, None)
                continue
            if run.status not in st.RUNNING:
                await self.repository.forget_run(tenant, interaction_id)
                continue
            if run.background:
                if await self.repository.job_waiting(tenant, interaction_id, run.fence):
                    await self.repository.watch(tenant, interaction_id, now_ms() + self._pickup_ms)
                    continue
                if run.status == st.QUEUED:
                    log.warning("queueing %s again: its job was lost before it started", member)
                    await self.enqueue(tenant, interaction_id, run.fence)
                    await self.repository.watch(tenant, interaction_id, now_ms() + self._pickup_ms)
                    continue
                frames = await self.repository.log_frames(tenant, interaction_id)
                # a re-run would show its followers a second answer after the first one's part: a run
                # whose clients saw output fails with that output kept instead
                if run.attempts < self.settings.runner.max_attempts and not assemble.has_output(frames):
                    if await self.hand_back(tenant, interaction_id, run.fence, refund=False):
                        log.warning(
                            "re-running %s: its runner was lost (attempt %d)", member, run.attempts + 1
                        )
                    continue
            message = LOST_WORKER if run.background else LOST_SERVER
            log.warning("failing %s: %s", member, message)
            await self.settle_without_run(
                tenant, interaction_id, run.status, st.FAILED, ErrorInfo(code="worker_lost", message=message)
            )
        return handled

    async def reap_forever(self) -> None:
        while True:
            try:
                await self.reap_once()
            except asyncio.CancelledError:
                raise
            except UNAVAILABLE as exc:
                self.outage.failed("reaper", exc)
            except Exception:
                log.exception("reaper pass failed")
            await asyncio.sleep(self.settings.runner.reaper_interval_seconds)


def _end_stream_on_failure(task: asyncio.Task[RunResult], listener: Listener) -> None:
    """A run that raised never sent its terminal events: its stream gets an `error` event and ends."""
    if task.cancelled():
        failure: BaseException | None = asyncio.CancelledError()
    else:
        failure = task.exception()
    if failure is None:
        return
    if isinstance(failure, UNAVAILABLE):
        # Redis went away under the run: its end is written by the reaper once Redis is back
        listener.put_nowait(unavailable_frame())
    else:
        if not isinstance(failure, asyncio.CancelledError):
            log.error("run failed", exc_info=failure)
        info = ErrorInfo(code="internal", message="The run failed")
        listener.put_nowait(frame(ErrorEvent(error=info)))
    listener.put_nowait(None)


def _upstream_request(config: InteractionConfig, upstream_model: str, history: list[Step]) -> UpstreamRequest:
    return UpstreamRequest(
        model=config.model or config.agent or "",
        upstream_model=upstream_model,
        history=history,
        config=config,
    )


def _config_of(request: CreateRequest) -> InteractionConfig:
    fields = {name: getattr(request, name) for name in InteractionConfig.__struct_fields__}
    return InteractionConfig(**fields)


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()
