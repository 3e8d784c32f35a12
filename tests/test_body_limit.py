"""A body over `http.max_body_bytes` (20 MiB) is a 413 to the official SDK's sync and async clients alike
(server/api/body.py): the server reads the upload to its end before answering, so a client still sending
is not cut off mid-write (the async client, on httpx's async transport, could not read the 413 then and
raised APIConnectionError). Against the real server (granian, in this process: tests/inproc.py)."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import pytest
from google.genai import _interactions as sdk_errors

from server.api.body import DRAIN_BYTES

from .replies import interaction
from .support import sdk

MIB = 1024 * 1024
#: over the limit, within what the server reads before it answers
OVER = "x" * (24 * MIB)


async def test_a_body_over_the_limit_is_a_413_to_the_async_sdk(base_url: str, api_key: str) -> None:
    client = sdk(base_url, api_key)
    for _ in range(2):  # and again on the same client: its connection is still fit for use
        with pytest.raises(sdk_errors.APIStatusError) as refused:
            await client.aio.interactions.create(model="echo", input=OVER)
        assert refused.value.status_code == 413
        assert "larger than the limit" in str(refused.value)
    created = interaction(await client.aio.interactions.create(model="echo", input="small"))
    assert created.status == "completed"


def test_a_body_over_the_limit_is_a_413_to_the_sync_sdk(base_url: str, api_key: str) -> None:
    client = sdk(base_url, api_key)
    with pytest.raises(sdk_errors.APIStatusError) as refused:
        client.interactions.create(model="echo", input=OVER)
    assert refused.value.status_code == 413


def test_a_body_past_what_is_read_is_refused_at_once_and_its_connection_closed(
    base_url: str, api_key: str
) -> None:
    """A declared length past the limit and DRAIN_BYTES is not read: the 413 comes before the body is
    sent, its connection closed after it."""
    length = 20 * MIB + DRAIN_BYTES + 1
    host, port = urlsplit(base_url).hostname, urlsplit(base_url).port
    assert host is not None and port is not None
    head = (
        f"POST /v1beta/interactions HTTP/1.1\r\nHost: {host}\r\nx-goog-api-key: {api_key}\r\n"
        f"content-type: application/json\r\ncontent-length: {length}\r\n\r\n"
    )
    with socket.create_connection((host, port), timeout=10) as conn:
        conn.sendall(head.encode() + b"{")
        reply = b""
        while chunk := conn.recv(65536):  # to the close
            reply += chunk
    status, _, rest = reply.partition(b"\r\n")
    assert status.split()[1] == b"413", reply
    assert b"connection: close" in rest.lower()
