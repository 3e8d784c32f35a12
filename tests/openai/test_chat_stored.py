"""Stored chat completions (`store: true`) through the official openai SDK: kept as a stored interaction
(the same record Google's dialect reads), read, listed by metadata and model in either order, their
messages read, deleted; only chat completions are listed or read as such."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI

from tests.fakes import openai as oa

from .chat_support import ChatServer, openai_client


@pytest.fixture
def google(chat: ChatServer, api_key: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=chat.url, headers={"x-goog-api-key": api_key}, timeout=30) as http:
        yield http


def ask(client: OpenAI, text: str, **fields: Any) -> Any:
    return client.chat.completions.create(
        model="echo", messages=[{"role": "user", "content": text}], store=True, **fields
    )


def test_a_stored_completion_is_read_back_as_it_was_answered(client: OpenAI, google: httpx.Client) -> None:
    made = ask(client, "keep this one", metadata={"topic": "keeping"})
    assert not made.id.startswith("chatcmpl-"), "a stored completion has its interaction's id"
    assert made.metadata == {"topic": "keeping"}
    got = client.chat.completions.retrieve(made.id)
    assert got.model_dump() == made.model_dump()
    # the same record, as Google's dialect shows it
    turn = google.get(f"/v1beta/interactions/{made.id}").json()
    assert turn["status"] == "completed" and turn["labels"] == {"topic": "keeping"}
    assert turn["steps"][-1]["content"] == [{"type": "text", "text": "keep this one"}]


def test_an_end_users_completions_are_found_by_their_labels(client: OpenAI, google: httpx.Client) -> None:
    """`user` and `safety_identifier` are labels, as in the Responses API: Google's list finds an end
    user's completions by them, and the completion's `metadata` shows only what was sent as metadata."""
    made = ask(client, "mine", metadata={"topic": "t"}, user="ann", safety_identifier="ann-hash")
    ask(client, "someone else's", user="bob")
    assert made.metadata == {"topic": "t"}
    assert client.chat.completions.retrieve(made.id).metadata == {"topic": "t"}
    listed = google.get("/v1beta/interactions", params={"labels.openai.user": "ann"}).json()["interactions"]
    assert [turn["id"] for turn in listed] == [made.id]
    assert listed[0]["labels"] == {"topic": "t", "openai.user": "ann", "openai.safety_identifier": "ann-hash"}
    with pytest.raises(openai.BadRequestError) as refused:
        ask(client, "a number is no user", user=7)
    assert refused.value.param == "user"


def test_a_streamed_stored_completion_has_one_id(client: OpenAI) -> None:
    chunks = list(
        client.chat.completions.create(
            model="echo",
            messages=[{"role": "user", "content": "stream and keep"}],
            store=True,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    [completion_id] = {chunk.id for chunk in chunks}
    got = client.chat.completions.retrieve(completion_id)
    assert got.choices[0].message.content == "stream and keep"
    assert got.usage is not None and chunks[-1].usage is not None
    assert got.usage.completion_tokens == chunks[-1].usage.completion_tokens == 3


def test_the_list_holds_chat_completions_only_filtered_by_metadata(
    client: OpenAI, google: httpx.Client
) -> None:
    mine = [ask(client, f"mine {i}", metadata={"owner": "ann"}).id for i in range(3)]
    ask(client, "theirs", metadata={"owner": "bob"})
    client.chat.completions.create(model="echo", messages=[{"role": "user", "content": "not stored"}])
    google.post("/v1beta/interactions", json={"model": "echo", "input": "hi", "labels": {"owner": "ann"}})
    listed = [each.id for each in client.chat.completions.list(metadata={"owner": "ann"})]
    assert listed == mine, "oldest first, OpenAI's default"
    assert len(list(client.chat.completions.list())) == 4
    assert list(client.chat.completions.list(model="gpt-4o")) == []
    assert [each.id for each in client.chat.completions.list(model="echo", metadata={"owner": "bob"})] != []


def test_pages_of_the_list_in_either_order(client: OpenAI) -> None:
    made = [ask(client, f"page {i}").id for i in range(5)]
    first = client.chat.completions.list(limit=2)
    assert [each.id for each in first.data] == made[:2] and first.has_more
    # the SDK pages on with `after` = the last id it got
    assert [each.id for each in client.chat.completions.list(limit=2)] == made
    assert [each.id for each in client.chat.completions.list(limit=2, order="desc")] == made[::-1]
    last = client.chat.completions.list(limit=2, after=made[2])
    assert [each.id for each in last.data] == made[3:] and not last.has_more


def test_a_stored_completions_messages(client: OpenAI) -> None:
    image: Any = {"type": "image_url", "image_url": {"url": "https://images.example/a.png"}}
    made = client.chat.completions.create(
        model="echo",
        store=True,
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Look: "}, image]},
            {"role": "assistant", "content": "A picture."},
            {"role": "user", "content": "And now?"},
        ],
    )
    messages = list(client.chat.completions.messages.list(made.id))
    assert [(m.id, m.role, m.content) for m in messages] == [
        (f"{made.id}-0", "system", "Be brief."),
        (f"{made.id}-1", "user", "Look: "),
        (f"{made.id}-2", "assistant", "A picture."),
        (f"{made.id}-3", "user", "And now?"),
    ]
    parts = messages[1].content_parts or []
    assert [part.type for part in parts] == ["text", "image_url"]
    newest = client.chat.completions.messages.list(made.id, order="desc", limit=1)
    assert [m.content for m in newest.data] == ["And now?"] and newest.has_more
    rest = client.chat.completions.messages.list(made.id, after=f"{made.id}-1", limit=10)
    assert [m.content for m in rest.data] == ["A picture.", "And now?"] and not rest.has_more


def test_delete(client: OpenAI, google: httpx.Client) -> None:
    made = ask(client, "short lived")
    deleted = client.chat.completions.delete(made.id)
    assert (deleted.id, deleted.object, deleted.deleted) == (made.id, "chat.completion.deleted", True)
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.retrieve(made.id)
    assert google.get(f"/v1beta/interactions/{made.id}").status_code == 404
    assert list(client.chat.completions.list()) == []


def test_only_chat_completions_are_read_as_such(client: OpenAI, google: httpx.Client) -> None:
    interaction = google.post("/v1beta/interactions", json={"model": "echo", "input": "hi"}).json()
    for call in (
        lambda: client.chat.completions.retrieve(interaction["id"]),
        lambda: client.chat.completions.delete(interaction["id"]),
        lambda: client.chat.completions.messages.list(interaction["id"]),
        lambda: client.chat.completions.retrieve("no such id"),
    ):
        with pytest.raises(openai.NotFoundError) as missing:
            call()
        assert missing.value.status_code == 404
    assert google.get(f"/v1beta/interactions/{interaction['id']}").status_code == 200


def test_metadata_cannot_be_updated(client: OpenAI) -> None:
    made = ask(client, "fixed", metadata={"a": "1"})
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.update(made.id, metadata={"a": "2"})
    assert refused.value.param == "metadata"
    assert client.chat.completions.retrieve(made.id).metadata == {"a": "1"}


def test_a_bad_list_parameter_is_a_400_naming_it(client: OpenAI) -> None:
    unserved: Any = "up"
    calls: list[tuple[Callable[[], object], str]] = [
        (lambda: client.chat.completions.list(limit=0), "limit"),
        (lambda: client.chat.completions.list(order=unserved), "order"),
        (lambda: client.chat.completions.list(extra_query={"status": "x"}), "status"),
    ]
    for call, param in calls:
        with pytest.raises(openai.BadRequestError) as refused:
            call()
        assert refused.value.param == param


def test_an_idempotency_key_makes_one_completion(client: OpenAI) -> None:
    headers = {"Idempotency-Key": "chat-once"}
    first = ask(client, "only once", extra_headers=headers)
    again = ask(client, "only once", extra_headers=headers)
    assert again.id == first.id
    assert [each.id for each in client.chat.completions.list()] == [first.id]


def test_a_retried_call_makes_one_stored_completion(chat: ChatServer, api_key: str) -> None:
    """The SDK's own retries (its default: two): a create whose model failed before it answered left
    nothing stored, so the retry that succeeds is the one stored completion."""
    chat.upstream.add(
        oa.openai_error(500, "The server had an error", "server_error"), oa.openai_text_script("At last.")
    )
    with openai_client(chat.url, api_key, max_retries=2) as retrying:
        made = retrying.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "once"}], store=True
        )
        assert made.choices[0].message.content == "At last."
        assert len(chat.upstream.requests) == 2, "the first try failed and was retried"
        assert [each.id for each in retrying.chat.completions.list()] == [made.id]
