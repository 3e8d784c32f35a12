"""The queue's one table of job kinds (store/jobs.py KINDS): each has its function in a worker, and each
id scheme of keys.py (and the webhooks' deliveries) maps to its kind's mark in progress and names the
tenant whose turn it waits for. No Redis."""

from __future__ import annotations

from server.store import jobs, keys
from server.webhooks.pending import Delivery
from server.worker_jobs import FUNCTIONS


def test_every_kind_has_its_function_once() -> None:
    assert list(FUNCTIONS) == [kind.name for kind in jobs.KINDS]
    assert len({kind.name for kind in jobs.KINDS}) == len(jobs.KINDS)
    # a run's lease, not its mark, finds it lost: its mark outlasts any run
    assert jobs.RUN_MARK_MS >= 24 * 3600 * 1000


def delivery_of(tenant: str) -> Delivery:
    return Delivery(
        tenant=tenant,
        event_id="evt",
        event_type="interaction.completed",
        body="{}",
        target="webhook:wh_1",
        first_ms=0,
    )


def test_each_id_scheme_has_its_kinds_mark() -> None:
    delivery = delivery_of("t")
    assert jobs.mark_of(keys.job_id("t", "v1_a", 3)) == "run"
    assert jobs.mark_of(keys.event_job_id("t", "v1_a")) == "attempt"
    assert jobs.mark_of(delivery.job_id) == "attempt"
    assert jobs.mark_of(keys.deletion_job_id("t", "d1")) == "attempt"
    assert jobs.mark_of(keys.trigger_fire_job_id("t", "tr_a", 1000)) == "fire"
    # a run of a tenant whose configured name starts like another kind's prefix is still a run
    assert jobs.mark_of(keys.job_id("whale", "v1_a", 1)) == "run"
    assert jobs.mark_of(keys.job_id("delta", "v1_a", 1)) == "run"


def test_each_id_scheme_names_its_tenant() -> None:
    for tenant in ("0123456789abcdef0123456789abcdef", "whale", "trig.a-b_c"):
        ids = [
            keys.job_id(tenant, "v1_a", 3),
            keys.event_job_id(tenant, "v1_a"),
            delivery_of(tenant).job_id,
            keys.deletion_job_id(tenant, "d1"),
            keys.trigger_fire_job_id(tenant, "tr_a", 1000),
            f"{keys.trigger_fire_job_id(tenant, 'tr_a', 1000)}/end",
        ]
        assert [jobs.tenant_of(job) for job in ids] == [tenant] * len(ids)
