"""Scenario 11's receiving end (webhooks.py): the receiver of the webhooks and of the direct POSTs, and the
server's own figure read from the worker's /metrics."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.fakes.http import FakeServer, RecordedRequest, Script

#: the worker's histogram of an interaction's end to its receiver's 2xx (server/observability/families.py)
FAMILY = "ix_webhook_event_delivery_seconds"

#: {le: cumulative count} of one histogram, with its "sum" and "count"
Histogram = dict[str, float]


class _Recorder(FakeServer):
    """The tests' FakeServer answering 200 and closing each connection (keep_alive False, as a cold receiver
    does), telling its receiver of each request as soon as it has been read (its `received_at`)."""

    def __init__(self, receiver: Receiver) -> None:
        super().__init__(Script(status=200, body=b"{}", content_type="application/json"))
        self.receiver = receiver

    async def _read_request(self, reader: asyncio.StreamReader) -> RecordedRequest | None:
        request = await super()._read_request(reader)
        if request is not None:
            self.receiver.arrived(request)
        return request


class Receiver:
    """What the receiver got, by `data.id` (the first request of each; later ones are counted)."""

    def __init__(self) -> None:
        self.server = _Recorder(self)
        self.found: dict[str, RecordedRequest] = {}
        self.waiting: dict[str, asyncio.Future[RecordedRequest]] = {}
        self.duplicates = 0

    @property
    def uri(self) -> str:
        return self.server.base_url + "/hook"

    def arrived(self, request: RecordedRequest) -> None:
        key = str(request.json().get("data", {}).get("id"))
        if key in self.found:
            self.duplicates += 1
            return
        self.found[key] = request
        future = self.waiting.pop(key, None)
        if future is not None and not future.done():
            future.set_result(request)

    async def wait_for(self, key: str, within: float) -> RecordedRequest | None:
        """The request for `key`, once it came; None when it did not within `within` seconds."""
        if key in self.found:
            return self.found[key]
        future = self.waiting[key] = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(within):
                request: RecordedRequest = await future
                return request
        except TimeoutError:
            return None
        finally:
            self.waiting.pop(key, None)

    def last_at(self, keys: list[str], default: float) -> float:
        return max((self.found[k].received_at for k in keys if k in self.found), default=default)


async def direct_post(uri: str, headers: dict[str, str], body: bytes) -> float:
    """One POST as the worker makes it (server/webhooks/delivery.py: a client of its own, no pool, no
    proxy, no certificate store over http); returns when it started."""
    client = httpx.AsyncClient(verify=False, trust_env=False, follow_redirects=False, timeout=10.0)
    async with client:
        started = time.monotonic()
        response = await client.post(uri, headers=headers, content=body)
    if response.status_code != 200:
        raise RuntimeError(f"the receiver answered {response.status_code}")
    return started


async def histogram(url: str) -> Histogram:
    """The worker's FAMILY for `kind="webhook"`, as it is now."""
    async with httpx.AsyncClient(trust_env=False) as client:
        text = (await client.get(url)).text
    found: Histogram = {}
    for family in text_string_to_metric_families(text):
        if family.name != FAMILY:
            continue
        for sample in family.samples:
            if sample.labels.get("kind") != "webhook":
                continue
            suffix = sample.name.rsplit("_", 1)[-1]
            if suffix in ("bucket", "sum", "count"):
                found[sample.labels["le"] if suffix == "bucket" else suffix] = sample.value
    return found


def summary(before: Histogram, after: Histogram) -> dict[str, Any]:
    """What the histogram recorded between two reads: its count, mean, and the bucket bounds under which
    half and 99% of it fall (a bucket's upper bound: the histogram holds no finer figure)."""
    count = after.get("count", 0.0) - before.get("count", 0.0)
    if count <= 0:
        return {"n": 0}
    buckets = [le for le in after if le not in ("sum", "count")]
    bounds = sorted((float(le), after[le] - before.get(le, 0.0)) for le in buckets)

    def bound(share: float) -> float | None:
        return next((le * 1000 for le, n in bounds if n >= share * count), None)

    mean = (after.get("sum", 0.0) - before.get("sum", 0.0)) / count
    return {
        "n": int(count),
        "mean_ms": round(mean * 1000, 1),
        "p50_le_ms": bound(0.5),
        "p99_le_ms": bound(0.99),
    }
