"""Create: plan the request once (runner/plan.py), then one short executor per mode.

Every executor answers a Reply (the interaction) or an EventStream (its frames); the API maps either to
a response. A foreground run's upstream failure with no output is raised as the UpstreamError itself (the
API answers it with the matching HTTP error), since nothing was stored that a client could read back.
"""

from __future__ import annotations

import asyncio
import logging

import msgspec

from ..errors import InvalidArgument, KeyUsed, NotFound, OverLimit
from ..observability import context, metrics
from ..protocol import status as st
from ..protocol import views
from ..protocol.interaction import CreateRequest, Usage, is_interaction_id
from ..protocol.records import Record
from ..protocol.steps import Step
from ..store import keys, search_tags
from ..store.commands import now_ms
from ..store.interactions import Chain
from ..store.new_records import NewRecord
from ..store.outage import UNAVAILABLE
from ..upstream.base import Backend, UpstreamRequest
from .handle import RunHandle
from .history import fill_function_result_names
from .idempotency import Idempotency
from .ids import new_id
from .log_sink import LogSink
from .plan import CreatePlan, Mode, plan_create
from .preflight import Preflight
from .replies import EventStream, Reply, relay
from .services import Services, UseCase
from .sinks import Listener, NullSink, RecordSink, RunResult
from .spec import RunSpec, upstream_request

log = logging.getLogger(__name__)


def _mode_label(plan: CreatePlan) -> str:
    """The mode of `ix_interactions_created_total` (a stored one; store=false is "stateless")."""
    if plan.mode is Mode.BACKGROUND:
        return "background"
    return "stream" if plan.stream else "foreground"


class Creator(UseCase):
    def __init__(self, services: Services, idempotency: Idempotency) -> None:
        super().__init__(services)
        self.idempotency = idempotency
        self.preflight = Preflight(services)

    async def create(
        self,
        tenant: str,
        request: CreateRequest,
        input_steps: list[Step],
        warnings: list[str],
        *,
        idempotency_key: str | None = None,
        body: bytes = b"",
        dialect: str | None = None,
        execution: str | None = None,
    ) -> Reply | EventStream:
        """Admitted under the tenant's limits first (limits/quota.py: refused, nothing else is done).
        `dialect`, `execution`: StoredConfig.dialect (None but for a dialect that lists what it made),
        CreatePlan.execution."""
        interaction_id = new_id()
        background = interaction_id if request.background else None
        try:
            budget = await self.quota.admit(tenant, background, stores=request.store)
        except OverLimit:
            # a repeat of a create its key made (a client's retry, a trigger's fire run again) is answered
            # that interaction, whose own run may be what holds the limit now
            made = await self.idempotency.made(tenant, idempotency_key, body) if request.store else None
            if made is None:
                raise
            return await self._reply_stored(tenant, made, request.stream)
        try:
            request, agent, warnings = await self.preflight.checked(tenant, request, warnings)
            plan = plan_create(
                request,
                input_steps,
                warnings,
                agent,
                created=views.timestamp(),
                idempotency_key=idempotency_key,
            )
            plan.stored.dialect, plan.budget, plan.execution = dialect, budget, execution
            return await self._planned(tenant, interaction_id, plan, body)
        except Exception:
            if background is not None:
                # its place is freed unless it was stored before the failure (it then runs)
                await self.quota.forget(tenant, background)
            raise

    async def _planned(
        self, tenant: str, interaction_id: str, plan: CreatePlan, body: bytes
    ) -> Reply | EventStream:
        backend, upstream_model = self.router.route(plan.config)
        if plan.mode is Mode.STATELESS:
            return await self._stateless(tenant, plan, backend, upstream_model)
        prev = plan.previous_interaction_id
        if prev is not None and not is_interaction_id(prev):
            # before the key is remembered: a refused create must not leave it pointing at nothing
            raise NotFound(prev)
        context.set_interaction(interaction_id)
        if plan.idempotency_key is not None:
            key = self.idempotency.claim(tenant, plan.idempotency_key, interaction_id, body)
            plan = msgspec.structs.replace(plan, key=key)
        try:
            return await self._stored(tenant, interaction_id, plan, backend, upstream_model)
        except KeyUsed as used:
            if plan.mode is Mode.BACKGROUND:
                await self.quota.forget(tenant, interaction_id)
            repeated = await self.idempotency.repeat(tenant, used, body)
            return await self._reply_stored(tenant, repeated, plan.stream)

    async def _stored(
        self, tenant: str, interaction_id: str, plan: CreatePlan, backend: Backend, upstream_model: str
    ) -> Reply | EventStream:
        """One with an Idempotency-Key is never inline: stored with its key before it runs (or KeyUsed)."""
        if plan.mode is Mode.INLINE:
            metrics.created(plan.config.model or plan.config.agent or "", _mode_label(plan))
            return await self._inline(tenant, interaction_id, plan, backend, upstream_model)
        if plan.mode is Mode.BACKGROUND:
            return await self._background(tenant, interaction_id, plan, backend, upstream_model)
        return await self._logged(tenant, interaction_id, plan, backend, upstream_model)

    # -- the executors -----------------------------------------------------------------------------------

    async def _stateless(
        self, tenant: str, plan: CreatePlan, backend: Backend, upstream_model: str
    ) -> Reply | EventStream:
        metrics.created(plan.config.model or plan.config.agent or "", "stateless")
        fill_function_result_names([], plan.input_steps)
        request = upstream_request(plan.config, upstream_model, plan.input_steps)
        backend.check(request)
        spec = self._spec(None, None, plan, request, backend)
        handle = RunHandle(None)
        tags = search_tags.tags_of(plan.config, None, plan.stored.dialect)

        async def count(status: str, usage: Usage | None, calls: int) -> None:
            await self.store.usage.add(tenant, tags, status, usage, calls)

        if not plan.stream:
            return self._answer(await self.runner.run(spec, handle, NullSink(spec, None, count)), plan)
        listener: Listener = asyncio.Queue()
        self.registry.start(handle, self.runner.run(spec, handle, NullSink(spec, listener, count)))
        return self._stream(listener, handle)

    async def _inline(
        self, tenant: str, interaction_id: str, plan: CreatePlan, backend: Backend, upstream_model: str
    ) -> Reply:
        prev = plan.previous_interaction_id
        generation = self.histories.generation(tenant)
        cached = self.histories.get(tenant, prev) if prev else None
        chain = await self.store.interactions.check_chain(tenant, prev, walk=bool(prev) and cached is None)
        history = self._history(tenant, prev, cached, chain, generation)
        fill_function_result_names(history, plan.input_steps)
        request = upstream_request(plan.config, upstream_model, [*history, *plan.input_steps])
        backend.check(request)
        spec = self._spec(tenant, interaction_id, plan, request, backend, fence=1)
        sink = RecordSink(
            spec,
            self.store.interactions,
            self.histories,
            chain=chain,
            input_steps=plan.input_steps,
            generation=generation,
        )
        # nothing can address this run but its caller: no task, no registration
        return self._answer(await self.runner.run(spec, RunHandle(None), sink), plan)

    async def _logged(
        self, tenant: str, interaction_id: str, plan: CreatePlan, backend: Backend, upstream_model: str
    ) -> Reply | EventStream:
        generation = self.histories.generation(tenant)
        request = await self._store_new(tenant, interaction_id, plan, backend, upstream_model, generation)
        spec = self._spec(tenant, interaction_id, plan, request, backend, fence=1)
        handle = RunHandle(keys.member(tenant, interaction_id))
        listener: Listener | None = asyncio.Queue() if plan.stream else None
        sink = LogSink(
            spec, self.store, self.writer, self.histories, handle, listener=listener, generation=generation
        )
        task = self.registry.start(handle, self.runner.run(spec, handle, sink))
        if listener is not None:
            return self._stream(listener, handle)
        # the run goes on (and settles) even if the caller is cancelled
        return self._answer(await asyncio.shield(task), plan)

    async def _background(
        self, tenant: str, interaction_id: str, plan: CreatePlan, backend: Backend, upstream_model: str
    ) -> Reply | EventStream:
        await self._store_new(tenant, interaction_id, plan, backend, upstream_model, None)
        await self._enqueue(tenant, interaction_id)
        if plan.stream:
            return EventStream(
                frames=self.events.frames(await self.events.prepare(tenant, interaction_id, None))
            )
        created = plan.created
        interaction = views.interaction(
            interaction_id=interaction_id,
            status=st.QUEUED,
            config=plan.stored,
            created=created,
            updated=created,
            previous_interaction_id=plan.previous_interaction_id,
        )
        interaction.warnings = plan.stored.warnings or None
        return Reply(interaction=interaction)

    # -- their parts -------------------------------------------------------------------------------------

    async def _enqueue(self, tenant: str, interaction_id: str) -> None:
        """Queue a stored background interaction's job. It is watched from its store on (a pickup
        deadline): when Redis cannot take the job now, the reaper queues it at that deadline, so the create
        answers what is true (stored, and it will run), never a 503 for an interaction that was stored."""
        try:
            await self.store.jobs.enqueue(tenant, interaction_id, 0)
        except UNAVAILABLE as exc:
            within, why = self.settings.runner.pickup_seconds, f"{type(exc).__name__}: {exc}"
            log.warning(
                "%s is stored; its job was not queued (%s): it is, within %g s", interaction_id, why, within
            )

    async def _store_new(
        self,
        tenant: str,
        interaction_id: str,
        plan: CreatePlan,
        backend: Backend,
        upstream_model: str,
        generation: int | None,
    ) -> UpstreamRequest:
        """Store the interaction before it runs (after checking its chain): queued for a worker, or
        claimed by this process (fence 1, a lease). Returns the upstream request of its whole history,
        checked by the backend: one it refuses fails the stored interaction, and the request with a 400."""
        prev = plan.previous_interaction_id
        background = plan.mode is Mode.BACKGROUND
        generation = self.histories.generation(tenant) if generation is None else generation
        cached = self.histories.get(tenant, prev) if prev else None
        record = NewRecord(
            status=st.QUEUED if background else st.IN_PROGRESS,
            created=plan.created,
            background=background,
            logged=True,
            config=plan.stored,
            input_steps=plan.input_steps,
            key=plan.key,
            execution=plan.execution,
        )
        chain = await self.store.interactions.create(
            tenant,
            interaction_id,
            record,
            previous_interaction_id=prev,
            walk=bool(prev) and cached is None,
            claim=not background,
            # watched from now: if its job is lost before a worker takes it, it is queued again
            pickup_deadline=now_ms() + self.settings.runner.pickup_ms if background else None,
        )
        metrics.created(plan.config.model or plan.config.agent or "", _mode_label(plan))
        history = self._history(tenant, prev, cached, chain, generation)
        if fill_function_result_names(history, plan.input_steps):
            await self.store.interactions.replace_input(tenant, interaction_id, plan.input_steps)
        request = upstream_request(
            plan.config, upstream_model, [*history, *plan.input_steps], background=background
        )
        try:
            backend.check(request)
        except InvalidArgument as exc:
            await self.settler.fail_unstarted(tenant, interaction_id, str(exc))
            raise
        return request

    def _history(
        self, tenant: str, prev: str | None, cached: tuple[Step, ...] | None, chain: Chain, generation: int
    ) -> list[Step]:
        if cached is not None:
            return list(cached)
        if chain.steps is not None and prev:
            self.histories.put(tenant, prev, tuple(chain.steps), generation)
        return chain.steps or []

    def _spec(
        self,
        tenant: str | None,
        interaction_id: str | None,
        plan: CreatePlan,
        request: UpstreamRequest,
        backend: Backend,
        *,
        fence: int = 0,
    ) -> RunSpec:
        return RunSpec(
            tenant=tenant,
            interaction_id=interaction_id,
            fence=fence,
            budget=plan.budget,
            created=plan.created,
            previous_interaction_id=plan.previous_interaction_id,
            config=plan.stored,
            request=request,
            backend=backend,
        )

    def _answer(self, result: RunResult, plan: CreatePlan) -> Reply:
        if result.error is not None and not result.produced:
            raise result.error
        interaction = result.interaction
        if plan.stored.warnings:
            interaction = msgspec.structs.replace(interaction, warnings=plan.stored.warnings)
        return Reply(interaction=interaction)

    def _stream(self, listener: Listener, handle: RunHandle) -> EventStream:
        runner = self.settings.runner
        cancel = runner.on_stream_disconnect == "cancel"
        return EventStream(frames=relay(listener, handle, runner.keepalive_seconds, cancel))

    async def _reply_stored(self, tenant: str, record: Record, stream: bool) -> Reply | EventStream:
        """A repeated Idempotency-Key: the first call's interaction (its stream, if one is asked for)."""
        if stream:
            return EventStream(frames=self.events.frames(await self.events.prepare(tenant, record.id, None)))
        return Reply(interaction=views.from_record(record, full_timeline=False))
