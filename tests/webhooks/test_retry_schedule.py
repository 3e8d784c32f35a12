"""When a failed delivery is tried again (server/webhooks/schedule.py), read from the schedule, not timed:
the pause's window doubles from the first pause, the whole window is random (the retries of events that
failed together spread over it), the retries end when the event's time is up, and a retry due in more
than a day keeps its job in Redis until then."""

from __future__ import annotations

import os
import random
import time
from datetime import datetime

import msgspec

from server.sections import WebhookSettings
from server.store import keys
from server.store.store import Store
from server.webhooks.schedule import retry_at_ms
from tests.fakes.http import Script

from .receivers import Receiver
from .test_sending import SETTINGS, _delivery, _sender, _webhook


def pauses(store: Store, attempt: int, count: int, now: float) -> list[float]:
    """`count` pauses (s) after a failed attempt `attempt`, as a worker's Sender draws them."""
    sender = _sender(store, os.urandom(32))
    delivery = _delivery("w", attempt=attempt, first_ms=int(now * 1000))
    return [(sender.next_attempt_ms(delivery, now) or 0) / 1000 - now for _ in range(count)]


def test_the_window_doubles_from_the_first_pause_up_to_the_longest(store: Store) -> None:
    # SETTINGS: first pause 2 s, longest 10 s
    now = time.time()
    for attempt, ceiling in [(1, 4.0), (2, 8.0), (3, 10.0), (9, 10.0)]:
        drawn = pauses(store, attempt, 400, now)
        assert all(2.0 - 0.002 <= pause <= ceiling + 0.002 for pause in drawn), (attempt, drawn)
        # the whole window is used, its floor and its ceiling alike
        assert min(drawn) < 2.0 + (ceiling - 2.0) * 0.05 and max(drawn) > ceiling - (ceiling - 2.0) * 0.05


def test_retries_of_events_that_failed_together_spread_over_the_window(store: Store) -> None:
    """Full jitter: each tenth of the window holds about a tenth of the retries (half of the pause
    random, as before, left the window's first half empty: the events of one outage came back in a
    crowd)."""
    drawn = pauses(store, 2, 4000, time.time())  # the window: 2 s to 8 s
    tenths = [0] * 10
    for pause in drawn:
        tenths[min(9, int((pause - 2.0) / 0.6))] += 1
    assert all(250 <= count <= 550 for count in tenths), tenths


def test_the_window_is_cut_at_the_retries_end() -> None:
    settings = WebhookSettings(backoff_initial_seconds=2.0, backoff_max_seconds=10.0, retry_for_seconds=60.0)
    draws = random.Random(25)
    now = time.time()
    ended = int((now - 55) * 1000)  # 5 s left: the window 2 to 10 s is cut at 5
    drawn = [(retry_at_ms(settings, 3, ended, now, draws) or 0) / 1000 - now for _ in range(200)]
    assert all(2.0 - 0.002 <= pause <= 5.0 + 0.002 for pause in drawn)
    assert max(drawn) > 4.5
    # fewer seconds left than the first pause: no more retries
    assert retry_at_ms(settings, 3, int((now - 58.5) * 1000), now, draws) is None


async def test_a_retry_due_in_more_than_a_day_keeps_its_job_until_then(store: Store) -> None:
    """A receiver answering 500, and a schedule whose next pause is two to three days: the retry is
    queued, its due time is in the attempt's record, and Redis keeps its job a day past that time (arq's
    own 1-day expiry from the moment it was queued would have dropped it before it was due)."""
    day = 86_400.0
    settings = msgspec.structs.replace(
        SETTINGS, backoff_initial_seconds=2 * day, backoff_max_seconds=3 * day, retry_for_seconds=30 * day
    )
    server_key = os.urandom(32)
    async with Receiver(Script(status=500, body=b"down")) as receiver:
        webhook_id = await _webhook(store, server_key, receiver.uri)
        await _sender(store, server_key, settings).send(_delivery(webhook_id))
        assert len(receiver.requests) == 1
    [entry] = await store.webhooks.deliveries("t-sending", webhook_id, 10)
    record = msgspec.json.decode(entry)
    assert record["outcome"] == "retry"
    due_ms = int(datetime.fromisoformat(record["next_attempt_at"]).timestamp() * 1000)
    job = _delivery(webhook_id, attempt=2).job_id
    assert await store.redis.zscore(keys.deferred(store.jobs.queue_name), job) == due_ms
    assert await store.redis.zscore(store.jobs.queue_name, job) == due_ms
    assert 2 * day <= due_ms / 1000 - time.time() <= 3 * day
    # the job's data outlives its due time by a day
    ttl_ms = await store.redis.pttl(keys.arq_job(job))
    assert ttl_ms >= due_ms - int(time.time() * 1000) + 86_000_000
