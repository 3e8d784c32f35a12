"""Limits per tenant (README, "Limits") on the suite's in-process server, with the official SDKs as clients:
each test is its own tenant and sets its own limits in the server's server.toml, as an operator does,
while the server runs."""

from __future__ import annotations

import datetime
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
import redis.asyncio as aioredis
from google import genai
from google.genai import types
from google.genai._gaos.lib.compat_errors import APIStatusError
from openai import OpenAI, RateLimitError

from server.store import keys
from server.store.commands import typed

from ..replies import id_of, interaction, output_text_of, usage_of
from ..support import new_key, sdk, tenant_of
from .operator import APPLIED_SECONDS, set_limits, write

WORDS = " ".join(f"w{i}" for i in range(30))  # echo counts 30 input tokens, and answers 30 more


def refused(call: Callable[[], object]) -> dict[str, Any]:
    """The error body of the 429 a call the SDK (retries off) raised."""
    return refused_with_headers(call)[0]


def refused_with_headers(call: Callable[[], object]) -> tuple[dict[str, Any], Any]:
    """The 429 of a call the SDK (retries off) raised: its error body and headers."""
    with pytest.raises(APIStatusError) as raised:
        call()
    assert raised.value.status_code == 429, raised.value
    error: dict[str, Any] = raised.value.response.json()["error"]
    return error, raised.value.response.headers


def _quota(error: dict[str, Any]) -> tuple[str, float]:
    """The limit a 429 names (its QuotaFailure) and its RetryInfo's delay (s)."""
    assert error["status"] == "RESOURCE_EXHAUSTED", error
    by_type = {detail["@type"].rsplit(".", 1)[-1]: detail for detail in error["details"]}
    [violation] = by_type["QuotaFailure"]["violations"]
    return violation["subject"], float(by_type["RetryInfo"]["retryDelay"].removesuffix("s"))


def _answers(http: httpx.Client, key: str) -> list[str]:
    """What the tenant's stored interactions answered (echo answers with its input), by the list."""
    reply = http.get(
        "/v1beta/interactions",
        headers={"x-goog-api-key": key},
        params={"page_size": 100, "include_steps": "true"},
    )
    assert reply.status_code == 200, reply.text
    return [
        "".join(part["text"] for part in step["content"])
        for item in reply.json()["interactions"]
        for step in item["steps"]
        if step["type"] == "model_output"
    ]


def _burst(client: genai.Client, rpm: int) -> tuple[list[str], dict[str, Any], Any]:
    """Creates until the limit refuses one: what was admitted (at least the minute's allowance, and one
    more for each interval the burst took on a slow machine), and the refusal's body and headers."""
    began, admitted = time.monotonic(), list[str]()
    while True:
        text = f"burst {len(admitted)}"
        try:
            client.interactions.create(model="echo", input=text)
        except APIStatusError as exc:
            assert exc.status_code == 429, exc
            refills = (time.monotonic() - began) * rpm / 60
            assert rpm <= len(admitted) <= rpm + refills + 1, (len(admitted), refills)
            return admitted, exc.response.json()["error"], exc.response.headers
        admitted.append(text)


def test_over_its_requests_per_minute_a_tenant_is_told_when_and_then_admitted(
    base_url: str, http: httpx.Client, server_config: Path
) -> None:
    key = new_key()
    set_limits(server_config, tenant_of(key), requests_per_minute=12)  # a burst of 12, then one every 5 s
    client = sdk(base_url, key)
    admitted, error, headers = _burst(client, 12)
    subject, delay = _quota(error)
    assert subject == "[auth.limits] requests_per_minute" and "requests_per_minute" in error["message"]
    assert 0 < delay <= 5.0 and headers["retry-after"] == str(math.ceil(delay))
    # nothing of the refused request was stored
    assert sorted(_answers(http, key)) == sorted(admitted)
    # the delay is right: well before it, still refused; after it, admitted
    began = time.monotonic()
    time.sleep(max(delay - 2.0, 0))
    refused(lambda: client.interactions.create(model="echo", input="too early"))
    time.sleep(max(delay - (time.monotonic() - began), 0) + 0.2)
    assert output_text_of(interaction(client.interactions.create(model="echo", input="on time"))) == "on time"


def test_the_sdks_default_retries_wait_out_a_429_and_store_once(
    base_url: str, http: httpx.Client, server_config: Path
) -> None:
    key = new_key()
    set_limits(server_config, tenant_of(key), requests_per_minute=20)  # one every 3 s after the burst
    admitted, _, _ = _burst(sdk(base_url, key), 20)
    # the SDK's own retries: a 429's Retry-After waited out, as it is sent
    retrying = genai.Client(api_key=key, http_options=types.HttpOptions(base_url=base_url))
    began = time.monotonic()
    with retrying:
        waited = interaction(retrying.interactions.create(model="echo", input="after the wait"))
    assert output_text_of(waited) == "after the wait" and time.monotonic() - began > 1.0
    with OpenAI(base_url=f"{base_url}/v1", api_key=key) as oai:  # its default retries: 2
        response = oai.responses.create(model="echo", input="openai after the wait")
    assert response.output_text == "openai after the wait"
    answers = _answers(http, key)
    assert answers.count("after the wait") == 1 and answers.count("openai after the wait") == 1
    assert len(answers) == len(admitted) + 2


def test_openai_dialects_answer_a_limit_in_their_envelope(base_url: str, server_config: Path) -> None:
    key = new_key()
    set_limits(server_config, tenant_of(key), requests_per_minute=1)
    with OpenAI(base_url=f"{base_url}/v1", api_key=key, max_retries=0) as oai:
        oai.responses.create(model="echo", input="admitted")
        with pytest.raises(RateLimitError) as raised:
            oai.chat.completions.create(model="echo", messages=[{"role": "user", "content": "refused"}])
    body = raised.value.response.json()["error"]
    assert body["type"] == "rate_limit_error" and body["code"] == "rate_limit_exceeded", body
    assert "requests_per_minute" in body["message"] and int(raised.value.response.headers["retry-after"]) >= 1


def test_a_token_budget_reached_mid_run_ends_it_budget_exceeded_with_its_output(
    base_url: str, http: httpx.Client, server_config: Path
) -> None:
    key = new_key()
    set_limits(server_config, tenant_of(key), tokens_per_day=38)  # its 30 input tokens and 8 more
    client = sdk(base_url, key)
    ended = interaction(client.interactions.create(model="echo-slow", input=WORDS))
    assert ended.status == "budget_exceeded", ended
    assert output_text_of(ended).split() == WORDS.split()[:8]
    usage = usage_of(ended)
    assert (usage.total_input_tokens, usage.total_output_tokens, usage.total_tokens) == (30, 8, 38)
    assert [error.code for error in ended.errors or []] == ["budget_exceeded"]
    assert client.interactions.get(id=id_of(ended)).status == "budget_exceeded"
    # the day's tokens are used up: refused until the next UTC day, in both dialects
    error = refused(lambda: client.interactions.create(model="echo", input="more"))
    subject, delay = _quota(error)
    now = datetime.datetime.now(datetime.UTC)
    midnight = datetime.datetime.combine(
        now.date() + datetime.timedelta(days=1), datetime.time(), datetime.UTC
    )
    assert subject == "[auth.limits] tokens_per_day" and abs(delay - (midnight - now).total_seconds()) < 5
    with OpenAI(base_url=f"{base_url}/v1", api_key=key, max_retries=0) as oai:
        with pytest.raises(RateLimitError) as raised:
            oai.responses.create(model="echo", input="more")
    assert raised.value.response.json()["error"]["code"] == "insufficient_quota"
    # counted once, as it ended
    report = http.get("/v1beta/usage", headers={"x-goog-api-key": key}).json()["total"]
    assert report["interactions"] == {"budget_exceeded": 1} and report["total_tokens"] == 38


def test_tokens_per_minute_stop_a_run_by_their_estimate_and_refuse_the_next(
    base_url: str, server_config: Path
) -> None:
    """echo (not slow) reports its usage only at the end: the run is stopped by the estimate."""
    key = new_key()
    set_limits(server_config, tenant_of(key), tokens_per_minute=45)
    client = sdk(base_url, key)
    ended = interaction(client.interactions.create(model="echo", input=WORDS))
    assert ended.status == "budget_exceeded", ended
    words = output_text_of(ended).split()
    assert 0 < len(words) < 30 and words == WORDS.split()[: len(words)]
    assert 45 <= (usage_of(ended).total_tokens or 0) <= 47
    error, headers = refused_with_headers(lambda: client.interactions.create(model="echo", input="more"))
    subject, delay = _quota(error)
    assert subject == "[auth.limits] tokens_per_minute" and 0 < delay <= 120
    assert int(headers["retry-after"]) >= delay


def test_a_run_with_no_budget_left_for_its_input_is_ended_before_its_call_and_counts_nothing(
    base_url: str, server_config: Path
) -> None:
    """Its input's estimate alone is past what the limit leaves: ended `budget_exceeded` before the
    upstream is called, and nothing counted for it (nothing was used), so the next create is admitted."""
    key = new_key()
    set_limits(server_config, tenant_of(key), tokens_per_minute=20)
    client = sdk(base_url, key)
    long_input = " ".join(f"word{i}" for i in range(60))  # about 100 tokens by the estimate
    ended = interaction(client.interactions.create(model="echo", input=long_input))
    assert ended.status == "budget_exceeded", ended
    assert not output_text_of(ended)
    with httpx.Client(base_url=base_url, headers={"x-goog-api-key": key}, timeout=30) as http:
        report = http.get("/v1beta/usage").json()["total"]
    assert report["interactions"] == {"budget_exceeded": 1} and not report.get("total_tokens"), report
    assert interaction(client.interactions.create(model="echo", input="short")).status == "completed"


def test_background_runs_at_once_are_limited_and_freed_by_their_end(
    base_url: str, server_config: Path
) -> None:
    key = new_key()
    set_limits(server_config, tenant_of(key), background_runs=2)
    client = sdk(base_url, key)
    # a background create that fails holds no run
    with pytest.raises(APIStatusError):
        client.interactions.create(model="echo", input="x", background=True, previous_interaction_id="v1_x")
    first, second = (
        interaction(client.interactions.create(model="echo-slow", input=WORDS, background=True))
        for _ in range(2)
    )
    error = refused(lambda: client.interactions.create(model="echo-slow", input=WORDS, background=True))
    assert _quota(error)[0] == "[auth.limits] background_runs"
    # foreground work is not a background run
    assert interaction(client.interactions.create(model="echo", input="now")).status == "completed"
    client.interactions.cancel(id=id_of(first))
    third = interaction(client.interactions.create(model="echo-slow", input=WORDS, background=True))
    for each in (second, third):
        client.interactions.cancel(id=id_of(each))


def test_a_repeat_of_an_admitted_create_gets_its_interaction_whatever_the_limits_now(
    base_url: str, server_config: Path
) -> None:
    """A retry with the create's Idempotency-Key (a client's, or a trigger's fire run again) answers what
    the key made, though that very run now holds the tenant's last background place; a new create is
    refused, and the key with another body is a 400 as always."""
    key = new_key()
    set_limits(server_config, tenant_of(key), background_runs=1, requests_per_minute=3)
    body = {"model": "echo-slow", "input": WORDS, "background": True}
    path = "/v1beta/interactions"
    with httpx.Client(base_url=base_url, headers={"x-goog-api-key": key}, timeout=30) as http:
        first = http.post(path, json=body, headers={"Idempotency-Key": "run-1"})
        assert first.status_code == 200, first.text
        again = http.post(path, json=body, headers={"Idempotency-Key": "run-1"})
        assert again.status_code == 200, again.text
        assert again.json()["id"] == first.json()["id"]
        other = http.post(path, json=body, headers={"Idempotency-Key": "run-2"})
        assert other.status_code == 429 and "background_runs" in other.text, other.text
        # the minute's allowance is spent now: the repeat is still answered
        assert http.post(path, json=body, headers={"Idempotency-Key": "run-1"}).status_code == 200
        changed = http.post(path, json={**body, "input": "else"}, headers={"Idempotency-Key": "run-1"})
        assert changed.status_code == 400 and "Idempotency-Key" in changed.text, changed.text
        sdk(base_url, key).interactions.cancel(id=first.json()["id"])
    assert len(_stored_ids(base_url, key)) == 1


def _stored_ids(base_url: str, key: str) -> list[str]:
    """The ids of the tenant's stored interactions."""
    with httpx.Client(base_url=base_url, headers={"x-goog-api-key": key}, timeout=30) as http:
        reply = http.get("/v1beta/interactions", params={"page_size": 100})
        assert reply.status_code == 200, reply.text
        return [item["id"] for item in reply.json()["interactions"]]


def test_a_tenants_limits_never_touch_another(base_url: str, server_config: Path) -> None:
    limited, free = new_key(), new_key()
    set_limits(server_config, tenant_of(limited), requests_per_minute=1, background_runs=1)
    sdk(base_url, limited).interactions.create(model="echo", input="one")
    refused(lambda: sdk(base_url, limited).interactions.create(model="echo", input="two"))
    other = sdk(base_url, free)
    for n in range(5):
        assert interaction(other.interactions.create(model="echo", input=f"free {n}")).status == "completed"
    runs = [other.interactions.create(model="echo-slow", input=WORDS, background=True) for _ in range(3)]
    for run in runs:
        other.interactions.cancel(id=id_of(interaction(run)))


def test_a_changed_limit_applies_without_a_restart_and_a_broken_file_keeps_it(
    base_url: str, server_config: Path
) -> None:
    key = new_key()
    client = sdk(base_url, key)
    set_limits(server_config, tenant_of(key), requests_per_minute=1)
    client.interactions.create(model="echo", input="one")
    refused(lambda: client.interactions.create(model="echo", input="two"))
    good = server_config.read_text()
    try:
        write(server_config, good + "\n[auth\n")  # a mistake: the limits in force stay
        refused(lambda: client.interactions.create(model="echo", input="three"))
        server_config.unlink()  # gone (not its built-in defaults, which have no limits): they stay too
        time.sleep(APPLIED_SECONDS)
        refused(lambda: client.interactions.create(model="echo", input="three"))
    finally:
        write(server_config, good)
    set_limits(server_config, tenant_of(key))  # its limit removed
    assert interaction(client.interactions.create(model="echo", input="four")).status == "completed"


async def test_stored_interactions_count_what_is_kept_by_the_day_it_expires(
    base_url: str, server_config: Path, redis: aioredis.Redis
) -> None:
    key = new_key()
    tenant = tenant_of(key)
    set_limits(server_config, tenant, stored_interactions=3)
    client = sdk(base_url, key)
    first = id_of(interaction(await client.aio.interactions.create(model="echo", input="one")))
    second = id_of(
        interaction(
            await client.aio.interactions.create(model="echo", input="two", previous_interaction_id=first)
        )
    )
    # the first is kept alive by the second, half a TTL longer: counted on its new day
    held = await typed(redis).hgetall(keys.stored_interactions(tenant))
    counted = {int(day): int(n) for day, n in held.items()}
    command = cast(Any, redis).execute_command
    expiries = [int(await command("PEXPIRETIME", keys.interaction(tenant, each))) for each in (first, second)]
    assert counted == {expiry // 86_400_000: 1 for expiry in expiries} and len(set(counted)) == 2
    await client.aio.interactions.create(model="echo", input="three", background=True)
    # stateless work stores nothing: not refused
    await client.aio.interactions.create(model="echo", input="four", store=False)
    error = refused(lambda: client.interactions.create(model="echo", input="four"))
    subject, delay = _quota(error)
    assert subject == "[auth.limits] stored_interactions" and delay > 86_400 * 10
    # a delete frees a place
    await client.aio.interactions.delete(id=second)
    assert interaction(await client.aio.interactions.create(model="echo", input="five")).status == "completed"
