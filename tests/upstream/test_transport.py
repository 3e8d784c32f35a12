"""The transport's reading of an upstream's error: how long it asks us to wait."""

from __future__ import annotations

import email.utils
import time

import httpx
import pytest

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
