"""The functions a worker runs for arq's jobs (registered by worker_host.py): an interaction's run, the
end of an interaction (its subscribers: webhooks, a trigger's execution), one webhook delivery attempt, a
delete by filter, and a trigger's fire and its execution's timeout."""

from __future__ import annotations

from typing import Any

from .observability import context, spans
from .runner.job_loop import JobFunction
from .runtime import Runtime
from .sections import WebhookSettings
from .store.jobs import DELETION_JOB, DELIVERY_JOB, EVENT_JOB, JOB_NAME, KINDS, TRIGGER_END_JOB, TRIGGER_JOB
from .webhooks import addresses, delivery
from .webhooks.pending import from_job


def webhook_mark_ms(settings: WebhookSettings) -> int:
    """A webhook job's mark in progress: its attempt's DNS lookup, the attempt and its body's wait, and 5 s
    for its Redis work."""
    seconds = (
        addresses.RESOLVE_TIMEOUT_SECONDS + settings.attempt_timeout_seconds + delivery.BODY_WAIT_SECONDS
    )
    return int(seconds * 1000) + 5_000


async def run_interaction(
    ctx: dict[str, Any],
    tenant: str,
    interaction_id: str,
    fence: int,
    request_id: str | None = None,
    trace: dict[str, str] | None = None,
) -> None:
    """The job: under the id of the request that queued it (a new one for a job queued by no request), so
    its log lines and its upstream call name that request, and in the trace it was queued in, if any."""
    runtime: Runtime = ctx["runtime"]
    valid = request_id is not None and context.valid_request_id(request_id)
    request = context.RequestContext(request_id if valid and request_id else context.new_request_id())
    request.tenant, request.interaction_id = tenant, interaction_id
    token = context.enter(request)
    try:
        queue = runtime.settings.worker.queue_name
        with spans.job(trace, queue, ctx.get("job_id", ""), interaction_id):
            await runtime.jobs.run(tenant, interaction_id, fence)
    finally:
        context.leave(token)


async def interaction_ended(
    ctx: dict[str, Any], tenant: str, interaction_id: str, ended_ms: int | None = None
) -> None:
    """The job queued with an interaction's end when anyone subscribes to it (store/scripts/_notify.lua),
    which every subscriber hears, each idempotently (a job run again, its worker killed, tells none twice):
    the trigger execution that made it is settled (triggers/outcome.py), and its webhooks get their
    deliveries (webhooks/dispatch.py). `ended_ms`: when it ended (jobs queued by an earlier version have
    none)."""
    runtime: Runtime = ctx["runtime"]
    await runtime.outcomes.ended(tenant, interaction_id)
    await runtime.webhook_events.dispatch(tenant, interaction_id, ended_ms)


async def deliver_webhook(ctx: dict[str, Any], delivery: dict[str, Any]) -> None:
    """One attempt of a webhook delivery (server/webhooks/sending.py)."""
    runtime: Runtime = ctx["runtime"]
    await runtime.webhook_sender.send(from_job(delivery))


async def fire_trigger(ctx: dict[str, Any], tenant: str, trigger_id: str, scheduled_ms: int) -> None:
    """One scheduled time of a trigger (server/triggers/firing.py)."""
    runtime: Runtime = ctx["runtime"]
    await runtime.firing.fire(tenant, trigger_id, scheduled_ms)


async def settle_trigger(ctx: dict[str, Any], tenant: str, trigger_id: str) -> None:
    """An execution's timeout: settled, its interaction cancelled if still running (triggers/outcome.py)."""
    runtime: Runtime = ctx["runtime"]
    await runtime.firing.settle(tenant, trigger_id)


async def delete_matching(ctx: dict[str, Any], tenant: str, deletion_id: str) -> None:
    """A delete by filter (server/search/deleting.py)."""
    runtime: Runtime = ctx["runtime"]
    await runtime.purges.run(tenant, deletion_id)


#: the function of each kind of job (store/jobs.py KINDS), by the name it is queued under (a kind with no
#: function fails the import)
_BY_NAME: dict[str, JobFunction] = {
    JOB_NAME: run_interaction,
    EVENT_JOB: interaction_ended,
    DELIVERY_JOB: deliver_webhook,
    DELETION_JOB: delete_matching,
    TRIGGER_JOB: fire_trigger,
    TRIGGER_END_JOB: settle_trigger,
}
#: what a worker runs (runner/job_loop.py), in KINDS' order
FUNCTIONS: dict[str, JobFunction] = {kind.name: _BY_NAME[kind.name] for kind in KINDS}
