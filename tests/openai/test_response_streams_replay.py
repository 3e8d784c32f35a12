"""A stream rendered live is the stream replayed from the log once its run ended, and, once the log is gone
(expired), the one rebuilt from the record (protocol/replay.py), whose numbers a resume may not use; on the
shared server (the app in this process)."""

from __future__ import annotations

import httpx
import redis as sync_redis
from openai import OpenAI

from server.store import keys

from ..conftest import Served
from ..support import new_key, tenant_of
from .conftest import openai_base
from .stream_checks import checked, get_stream, post_stream, text_of


def _client(url: str, key: str) -> OpenAI:
    return OpenAI(base_url=openai_base(url), api_key=key, max_retries=0)


def test_a_stream_live_is_the_stream_replayed_and_rebuilt(server: Served) -> None:
    url = server.url
    key = new_key()
    body = {"model": "echo", "input": "the same stream every time", "metadata": {"run": "one"}}
    live = post_stream(url, key, body)
    response_id = live.events[0]["response"]["id"]
    replayed = get_stream(url, key, response_id)
    assert replayed.events == live.events
    # the log gone (expired), the stream is rebuilt from the record: one delta per text, the same items
    with sync_redis.Redis.from_url(server.redis_url) as redis:
        assert redis.delete(keys.events(tenant_of(key), response_id)) == 1
    rebuilt = checked(_raw(url, key, response_id))
    assert rebuilt.events[-1] == {**live.events[-1], "sequence_number": rebuilt.events[-1]["sequence_number"]}
    assert text_of(rebuilt) == text_of(live)
    items = [e["item"] for e in rebuilt.events if e["type"] == "response.output_item.done"]
    assert items == [e["item"] for e in live.events if e["type"] == "response.output_item.done"]
    # its numbers are not the log's: a resume against them is refused, naming the parameter
    refused = httpx.get(
        f"{url}/v1/responses/{response_id}",
        params={"stream": "true", "starting_after": "3"},
        headers={"authorization": f"Bearer {key}"},
    )
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "starting_after"


def test_a_plain_create_streams_from_its_record_and_resumes(server: Served) -> None:
    """A response stored without a log (a plain create) has only its record's numbering: served."""
    url = server.url
    key = new_key()
    with _client(url, key) as client:
        response = client.responses.create(model="echo", input="no log for this one")
    whole = checked(_raw(url, key, response.id))
    after = get_stream(url, key, response.id, starting_after=2)
    assert after.events == whole.events[3:]
    assert text_of(whole) == "no log for this one"


def test_a_bad_starting_after_is_a_400_naming_it(server: Served) -> None:
    url = server.url
    key = new_key()
    with _client(url, key) as client:
        response = client.responses.create(model="echo", input="hi")
    for value in ("-1", "x", "٣", "1" * 30):
        refused = httpx.get(
            f"{url}/v1/responses/{response.id}",
            params={"stream": "true", "starting_after": value},
            headers={"authorization": f"Bearer {key}"},
        )
        assert refused.status_code == 400, value
        assert refused.json()["error"]["param"] == "starting_after"


def _raw(url: str, key: str, response_id: str) -> bytes:
    with httpx.Client(headers={"authorization": f"Bearer {key}"}, timeout=30) as http:
        response = http.get(f"{url}/v1/responses/{response_id}", params={"stream": "true"})
    assert response.status_code == 200, response.text
    return response.content


def test_stream_parameters_need_a_stream_and_an_unknown_id_is_a_404(base_url: str, api_key: str) -> None:
    headers = {"authorization": f"Bearer {api_key}"}
    with _client(base_url, api_key) as client:
        response = client.responses.create(model="echo", input="hi")
    for name, value in (("starting_after", "2"), ("include_obfuscation", "true")):
        refused = httpx.get(f"{base_url}/v1/responses/{response.id}", params={name: value}, headers=headers)
        assert refused.status_code == 400
        assert refused.json()["error"]["param"] == name
    missing = httpx.get(f"{base_url}/v1/responses/nosuchresponse", params={"stream": "true"}, headers=headers)
    assert missing.status_code == 404
    assert missing.json()["error"]["param"] == "response_id"
