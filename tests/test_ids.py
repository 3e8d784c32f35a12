"""Odd ids against the real server: event ids that are no event ids of ours (past 64 bits, non-ASCII
digits, signs, leading zeros) are a 400 naming `last_event_id` before anything is asked of Redis; odd
interaction ids (non-ASCII, too long, control characters) are a 404; an encoded slash in a path separates
nothing, so `<id>%2Fcancel` cancels nothing and `<id>%2F` deletes nothing."""

from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

import httpx
import pytest

PATH = "/v1beta/interactions"

BAD_EVENT_IDS = [
    "evt_18446744073709551616",  # 2**64: one past what a Redis stream entry id holds
    "evt_" + "9" * 40,
    "evt_\u0663",  # ARABIC-INDIC DIGIT THREE: int() takes it
    "evr_\u0663",
    "evt_\uff13",  # FULLWIDTH DIGIT THREE
    "evt_-1",
    "evt_+1",
    "evt_01",
    "evt_0",
    "evt_1 ",
    " evt_1",
    "evt_1.5",
    "evt_0x10",
    "evt_",
    "evt",
    "EVT_1",
    "xyz_1",
    "evt_1\x00",
    "evt_1_2",
    "e" * 5000,
]


def error_of(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text[:500]
    error = response.json()["error"]
    assert error["code"] == status and error["status"], error
    return str(error["message"])


@pytest.fixture
def interaction_id(http: httpx.Client) -> str:
    """A streamed interaction: its event log exists, so an event id is looked for in Redis."""
    created = http.post(PATH, json={"model": "echo", "input": "a few words", "stream": True})
    assert created.status_code == 200, created.text
    first = created.text.split("data: ", 1)[1].split("\n", 1)[0]
    return str(json.loads(first)["interaction"]["id"])


@pytest.mark.parametrize("bad", BAD_EVENT_IDS, ids=lambda v: repr(v)[:30])
def test_a_bad_last_event_id_is_a_400_naming_it(http: httpx.Client, interaction_id: str, bad: str) -> None:
    response = http.get(f"{PATH}/{interaction_id}", params={"stream": "true", "last_event_id": bad})
    message = error_of(response, 400)
    assert "`last_event_id`" in message
    assert len(message) < 300  # the value is shown cut, not echoed whole


def test_a_bad_last_event_id_header_is_a_400(http: httpx.Client, interaction_id: str) -> None:
    headers = {"last-event-id": "evt_18446744073709551616"}
    response = http.get(f"{PATH}/{interaction_id}", params={"stream": "true"}, headers=headers)
    assert "`last_event_id`" in error_of(response, 400)


def test_the_event_id_is_checked_before_the_interaction_is_looked_up(http: httpx.Client) -> None:
    """A malformed event id is refused as such even for an id that names nothing: no Redis call."""
    params = {"stream": "true", "last_event_id": "evt_18446744073709551616"}
    assert "`last_event_id`" in error_of(http.get(f"{PATH}/v1_nothing_here", params=params), 400)
    params["last_event_id"] = "evt_1"
    error_of(http.get(f"{PATH}/v1_nothing_here", params=params), 404)


@pytest.mark.parametrize("seq", ["9999", "18446744073709551615"])
def test_a_well_formed_event_id_this_interaction_lacks_is_a_400(
    http: httpx.Client, interaction_id: str, seq: str
) -> None:
    """The largest number Redis takes reaches Redis and is answered as unknown, not as a 500."""
    for kind in ("evt", "evr"):
        params = {"stream": "true", "last_event_id": f"{kind}_{seq}"}
        message = error_of(http.get(f"{PATH}/{interaction_id}", params=params), 400)
        assert "last_event_id" in message and "Unknown" in message


ODD_INTERACTION_IDS = [
    "%C3%A9t%C3%A9",  # été
    "v1_%D9%A3",  # v1_ and an Arabic-Indic digit
    "a" * 129,  # one past the longest id
    "a" * 5000,
    "abc%00def",
    "abc%0Adef",
    "abc%0D%0Adef",
    "abc%7F",
    "%FF%FE",
    "a%20b",
    "%2E%2E",
    "v1_abc%3F",
    "v1_abc%23x",
]


@pytest.mark.parametrize("odd", ODD_INTERACTION_IDS, ids=lambda v: v[:20])
def test_odd_interaction_ids_are_404s(http: httpx.Client, odd: str) -> None:
    for method, path in (("GET", ""), ("POST", "/cancel"), ("DELETE", "")):
        response = http.request(method, f"{PATH}/{odd}{path}")
        message = error_of(response, 404)
        assert len(message) < 300, message  # a long id is shown cut


def test_an_odd_id_sent_raw_is_a_404(base_url: str, api_key: str) -> None:
    """Bytes no client library would send as they are: a control character, a non-UTF-8 byte."""
    address = urlsplit(base_url)
    for path in (b"/v1beta/interactions/a\x01b", b"/v1beta/interactions/v1_\xff"):
        with socket.create_connection((address.hostname or "", address.port or 80), timeout=10) as sock:
            sock.sendall(
                b"GET "
                + path
                + b" HTTP/1.1\r\nhost: x\r\nconnection: close\r\nx-goog-api-key: "
                + api_key.encode()
                + b"\r\n\r\n"
            )
            reply = b""
            while chunk := sock.recv(65536):
                reply += chunk
        status = reply.split(b"\r\n", 1)[0]
        # refused by the HTTP layer (400) or by us (404): never a 5xx, never a match
        assert status.startswith((b"HTTP/1.1 400", b"HTTP/1.1 404")), reply[:300]


# ---------------------------------------------------------------------------------------------------------
# Encoded slashes


def test_an_encoded_slash_cancels_nothing(http: httpx.Client) -> None:
    job = http.post(PATH, json={"model": "echo-slow", "input": "slowly " * 400, "background": True})
    assert job.status_code == 200, job.text
    job_id = job.json()["id"]
    try:
        for slash in ("%2F", "%2f"):
            response = http.post(f"{PATH}/{job_id}{slash}cancel")
            assert slash.encode() in response.request.url.raw_path  # sent as written
            assert "%2F" in error_of(response, 404)
            assert http.get(f"{PATH}/{job_id}").json()["status"] == "in_progress"
    finally:
        assert http.post(f"{PATH}/{job_id}/cancel").json()["status"] == "cancelled"


def test_an_encoded_slash_deletes_nothing(http: httpx.Client, interaction_id: str) -> None:
    for path in (f"{PATH}/{interaction_id}%2F", f"{PATH}/{interaction_id}%2f"):
        error_of(http.delete(path), 404)
        assert http.get(f"{PATH}/{interaction_id}").status_code == 200
    assert http.delete(f"{PATH}/{interaction_id}").status_code == 200


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1beta%2Finteractions/{id}"),
        ("GET", "/v1beta/interactions%2F{id}"),
        ("GET", "/v1beta/projects%2Fp/locations/l/interactions/{id}"),
        ("GET", "/v1beta/projects/p/locations/l%2Finteractions/{id}"),
        ("POST", "/v1beta%2Finteractions"),
        ("POST", "/v1beta/interactions%2F"),
        ("POST", "/v1beta/projects/p%2Flocations/l/interactions"),
    ],
)
def test_an_encoded_slash_anywhere_in_the_path_is_a_404(
    http: httpx.Client, interaction_id: str, method: str, path: str
) -> None:
    body = {"model": "echo", "input": "hi"} if method == "POST" else None
    error_of(http.request(method, path.format(id=interaction_id), json=body), 404)


def test_an_encoded_slash_in_the_query_is_fine(http: httpx.Client, interaction_id: str) -> None:
    response = http.get(f"{PATH}/{interaction_id}?include_input=true&note=a%2Fb")
    assert response.status_code == 200, response.text
