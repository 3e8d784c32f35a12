"""Waiting before a retry: the upstream's own wait as the transport reads it, else our jittered backoff."""

from __future__ import annotations

import email.utils
import random
import statistics
import time

import httpx
import pytest

from server.upstream.base import backoff_delay
from server.upstream.transport import retry_after

CASES = {
    "seconds": ({"Retry-After": "7"}, 7.0),
    "milliseconds": ({"retry-after-ms": "1500"}, 1.5),
    "milliseconds-first": ({"retry-after-ms": "1500", "retry-after": "2"}, 1.5),  # as the SDKs read them
    "bad-milliseconds": ({"retry-after-ms": "soon", "retry-after": "2"}, 2.0),
    # LiteLLM relays the provider's headers under `llm_provider-`
    "litellm-seconds": ({"llm_provider-retry-after": "3"}, 3.0),
    "litellm-milliseconds": ({"llm_provider-retry-after-ms": "250"}, 0.25),
    "proxy-own-first": ({"Retry-After": "1", "llm_provider-retry-after": "30"}, 1.0),
    "negative": ({"Retry-After": "-4"}, 0.0),
    "nan": ({"Retry-After": "nan"}, None),
    "infinite": ({"retry-after-ms": "inf"}, None),
    "ratelimit-reset": ({"x-ratelimit-reset-requests": "6m0s"}, None),  # a replenish time, not a wait
    "none": ({}, None),
}


@pytest.mark.parametrize(("headers", "seconds"), list(CASES.values()), ids=list(CASES))
def test_retry_after_headers(headers: dict[str, str], seconds: float | None) -> None:
    assert retry_after(httpx.Headers(headers)) == seconds


def test_retry_after_as_an_http_date_also_from_a_proxy() -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    for name in ("Retry-After", "llm_provider-retry-after"):
        waited = retry_after(httpx.Headers({name: when}))
        assert waited is not None and 28 <= waited <= 31
    assert retry_after(httpx.Headers({"Retry-After": "Tuesday"})) is None


def test_backoff_is_full_jitter_under_the_capped_exponential() -> None:
    """uniform(0, min(cap, initial * 2**(attempt - 1))), drawn from the generator it is given."""
    rng, same = random.Random(7), random.Random(7)
    delays = [backoff_delay(attempt, 0.5, 8.0, rng) for attempt in range(1, 8)]
    assert delays == [same.uniform(0.0, ceiling) for ceiling in (0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0)]


def test_backoff_spreads_out_runs_that_failed_together() -> None:
    """A thousand runs on their third attempt: no two wait alike, and the waits cover the whole range."""
    rng = random.Random(2026)
    delays = [backoff_delay(3, 0.5, 8.0, rng) for _ in range(1000)]
    assert len(set(delays)) == len(delays)
    assert all(0.0 <= delay <= 2.0 for delay in delays)
    assert min(delays) < 0.05 and max(delays) > 1.95
    assert 0.9 < statistics.mean(delays) < 1.1


def test_backoff_edges() -> None:
    assert 0.0 <= backoff_delay(10_000, 0.5, 8.0, random.Random(0)) <= 8.0  # no float overflow
    assert backoff_delay(1, 0.0, 8.0) == 0.0
    assert backoff_delay(4, 1.0, 0.0) == 0.0
