"""The queue's one table of job kinds (store/jobs.py KINDS): each has its function in a worker, and each
id scheme of keys.py (and the webhooks' deliveries) maps to its kind's mark in progress. No Redis."""

from __future__ import annotations

from server.store import jobs, keys
from server.webhooks.pending import Delivery
from server.worker_jobs import FUNCTIONS


def test_every_kind_has_its_function_once() -> None:
    assert list(FUNCTIONS) == [kind.name for kind in jobs.KINDS]
    assert len({kind.name for kind in jobs.KINDS}) == len(jobs.KINDS)
    # a run's lease, not its mark, finds it lost: its mark outlasts any run
    assert jobs.RUN_MARK_MS >= 24 * 3600 * 1000


def test_each_id_scheme_has_its_kinds_mark() -> None:
    delivery = Delivery(
        tenant="t",
        event_id="evt",
        event_type="interaction.completed",
        body="{}",
        target="webhook:wh_1",
        first_ms=0,
    )
    assert jobs.mark_of(keys.job_id("t", "v1_a", 3)) == "run"
    assert jobs.mark_of(keys.event_job_id("t", "v1_a")) == "attempt"
    assert jobs.mark_of(delivery.job_id) == "attempt"
    assert jobs.mark_of(keys.deletion_job_id("t", "d1")) == "attempt"
    assert jobs.mark_of(keys.trigger_fire_job_id("t", "tr_a", 1000)) == "fire"
    # a run of a tenant whose configured name starts like another kind's prefix is still a run
    assert jobs.mark_of(keys.job_id("whale", "v1_a", 1)) == "run"
    assert jobs.mark_of(keys.job_id("delta", "v1_a", 1)) == "run"
