"""Creates sent by the official SDK with its default retries, each from a tenant of its own so that what it
left stored can be counted.

google-genai's interactions client (3.x) retries when `HttpOptions.retry_options` is left unset: 5 attempts
in all, waits of 0.5 s doubling (each 0-25 % shorter), on 408, 409, 429, any 5xx and connection errors. It
reads `retry-after-ms` only, not the server's `Retry-After: 1`."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
from google import genai
from google.genai import types

from ..support import OPENED, new_key, tls_context
from .load import PATH, REQUEST_TIMEOUT

#: how a create is sent: its body's flags
KINDS: dict[str, dict[str, Any]] = {
    "foreground": {},
    "background": {"background": True},
    "stream": {"stream": True},
}


def retrying_sdk(base_url: str, api_key: str) -> genai.Client:
    """The SDK as a user makes it: retry_options unset (tests/support.py's `sdk` turns them off)."""
    options = types.HttpOptions(
        base_url=base_url,
        api_version="v1beta",
        client_args={"verify": tls_context()},
        async_client_args={"verify": tls_context(), "ssl": tls_context()},
    )
    client = genai.Client(api_key=api_key, http_options=options)
    OPENED.append(client)
    return client


class RetriedCreate(threading.Thread):
    """One `client.interactions.create()` of `kind`, sent `delay` seconds after start(): whether it got a
    2xx (a stream: it opened) and the id it was given, or what it raised once its retries were spent."""

    def __init__(self, base_url: str, kind: str, delay: float, idempotency_key: str | None = None) -> None:
        super().__init__(daemon=True, name=f"create-{kind}-{delay:g}")
        self.base_url, self.kind, self.delay = base_url, kind, delay
        self.api_key = new_key()
        self.headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        self.succeeded = False
        self.interaction_id: str | None = None
        self.raised = ""
        self.took = 0.0

    def run(self) -> None:
        time.sleep(self.delay)
        client = retrying_sdk(self.base_url, self.api_key)
        started = time.monotonic()
        flags = KINDS[self.kind]
        try:
            reply: Any = client.interactions.create(
                model="echo", input=f"sent {self.name}", extra_headers=self.headers, **flags
            )
            self.succeeded = True
            if self.kind == "stream":
                for event in reply:
                    found = getattr(getattr(event, "interaction", None), "id", None)
                    self.interaction_id = self.interaction_id or found
            else:
                self.interaction_id = reply.id
        except Exception as exc:  # what the SDK raised is the outcome being recorded
            self.raised = f"{type(exc).__name__}: {str(exc)[:200]}"
        self.took = time.monotonic() - started

    def describe(self) -> str:
        outcome = f"2xx {self.interaction_id}" if self.succeeded else self.raised
        return f"{self.name} ({self.took:.1f} s): {outcome}"


def stored_ids(base_url: str, api_key: str) -> dict[str, str]:
    """Every interaction the tenant of `api_key` has stored (id -> status), by the list endpoint."""
    with httpx.Client(
        base_url=base_url, headers={"x-goog-api-key": api_key}, timeout=REQUEST_TIMEOUT
    ) as http:
        reply = http.get(PATH, params={"page_size": 100})
        assert reply.status_code == 200, reply.text
        return {item["id"]: item["status"] for item in reply.json()["interactions"]}
