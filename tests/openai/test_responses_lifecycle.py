"""The Responses lifecycle on `make run`'s stack (a worker in the web process, its own Redis) and on a web +
workers stack: background runs polled to their end, cancel, delete, one chain continued in both dialects,
metadata as labels in the list, the search and the purge."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from google import genai
from openai import BadRequestError, NotFoundError, OpenAI
from openai.types.responses import Response

from ..replies import id_of, interaction, steps_of, text_of_step, usage_of
from ..support import Stack, new_key, sdk, stacks_by_topology
from ..waiting import until
from .checks import create, retrieve, valid
from .conftest import openai_base

NAMES = ["make-run", "tcp-workers"]
SLOW = " ".join(["word"] * 80)


@pytest.fixture(scope="module")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Stack]]:
    with stacks_by_topology(tmp_path_factory, "responses", NAMES) as started:
        yield started


class Tenant:
    """One API key on a stack, in both dialects: the openai SDK, google-genai, and plain HTTP."""

    def __init__(self, stack: Stack) -> None:
        self.key = new_key()
        self.oai = OpenAI(base_url=openai_base(stack.url), api_key=self.key, max_retries=0)
        self.google: genai.Client = sdk(stack.url, self.key)
        self.http = httpx.Client(base_url=stack.url, headers={"x-goog-api-key": self.key}, timeout=30)

    def close(self) -> None:
        self.oai.close()
        self.http.close()

    def finished(self, response_id: str) -> Response:
        def ended() -> Response | None:
            got = retrieve(self.oai, response_id)
            return got if got.status not in ("queued", "in_progress") else None

        return until(ended, timeout=30)


@pytest.fixture(params=NAMES)
def tenant(request: pytest.FixtureRequest, stacks: dict[str, Stack]) -> Iterator[Tenant]:
    made = Tenant(stacks[request.param])
    yield made
    made.close()


def test_background_is_queued_then_polled_to_completed(tenant: Tenant) -> None:
    queued = create(tenant.oai, model="echo", input="in the background", background=True)
    assert queued.status == "queued" and queued.background is True and queued.output == []
    done = tenant.finished(queued.id)
    assert done.status == "completed" and done.background is True
    assert done.output_text == "in the background"


def test_cancel_a_background_run(tenant: Tenant) -> None:
    running = create(tenant.oai, model="echo-slow", input=SLOW, background=True)
    cancelled = tenant.oai.responses.with_raw_response.cancel(running.id)
    body = valid(cancelled.http_response.content)
    assert body["status"] == "cancelled"
    assert retrieve(tenant.oai, running.id).status == "cancelled"
    # a cancel of a finished background response answers it as it is
    assert tenant.oai.responses.cancel(running.id).status == "cancelled"


def test_a_foreground_response_cannot_be_cancelled(tenant: Tenant) -> None:
    done = create(tenant.oai, model="echo", input="done already")
    with pytest.raises(BadRequestError) as caught:
        tenant.oai.responses.cancel(done.id)
    assert caught.value.param == "response_id"
    assert "background" in caught.value.message


def test_delete_then_everything_is_404(tenant: Tenant) -> None:
    gone = create(tenant.oai, model="echo", input="to be deleted")
    reply = tenant.oai.responses.with_raw_response.delete(gone.id)
    assert reply.http_response.json() == {"id": gone.id, "object": "response.deleted", "deleted": True}
    with pytest.raises(NotFoundError) as caught:
        tenant.oai.responses.retrieve(gone.id)
    assert caught.value.body == {
        "message": f"Response with id {gone.id!r} not found.",
        "type": "invalid_request_error",
        "param": "response_id",
        "code": None,
    }
    with pytest.raises(NotFoundError):
        tenant.oai.responses.delete(gone.id)
    with pytest.raises(NotFoundError):
        tenant.oai.responses.input_items.list(gone.id)
    with pytest.raises(NotFoundError) as continued:
        tenant.oai.responses.create(model="echo", input="next", previous_response_id=gone.id)
    assert continued.value.param == "previous_response_id"


def test_a_chain_of_four_turns_in_both_dialects(tenant: Tenant) -> None:
    first = interaction(tenant.google.interactions.create(model="echo", input="one two"))
    second = create(tenant.oai, model="echo", input="three", previous_response_id=id_of(first))
    third = interaction(
        tenant.google.interactions.create(model="echo", input="four five", previous_interaction_id=second.id)
    )
    fourth = create(tenant.oai, model="echo", input="six", previous_response_id=id_of(third))
    # echo counts every word it was given: the whole chain reached the model each time
    assert usage_of(first).total_input_tokens == 2
    assert second.usage is not None and second.usage.input_tokens == 2 + 2 + 1
    assert usage_of(third).total_input_tokens == 5 + 1 + 2
    assert fourth.usage is not None and fourth.usage.input_tokens == 8 + 2 + 1
    assert fourth.output_text == "six" and fourth.previous_response_id == third.id
    # a get in either dialect shows the same turn
    google_fourth = tenant.google.interactions.get(fourth.id)
    assert google_fourth.previous_interaction_id == third.id
    assert [text_of_step(step) for step in steps_of(google_fourth)] == ["six", "six"]
    assert retrieve(tenant.oai, id_of(third)).output_text == third.output_text == "four five"
    assert retrieve(tenant.oai, id_of(first)).output_text == "one two"


def test_metadata_is_labels_for_the_list_the_search_and_the_purge(tenant: Tenant) -> None:
    tagged = create(tenant.oai, model="echo", input="tagged", metadata={"session": "s1"}, user="u-7")
    google = create_google(tenant, {"session": "s1"})
    create(tenant.oai, model="echo", input="other", metadata={"session": "s2"})
    google_view = tenant.http.get(f"/v1beta/interactions/{tagged.id}").json()
    assert google_view["labels"] == {"session": "s1", "openai.user": "u-7"}
    # and back: Google's labels are the metadata of the Response
    assert retrieve(tenant.oai, google).metadata == {"session": "s1"}
    listed = tenant.http.get("/v1beta/interactions", params={"labels.session": "s1"}).json()
    assert sorted(item["id"] for item in listed["interactions"]) == sorted([tagged.id, google])
    by_user = tenant.http.get("/v1beta/interactions", params={"labels.openai.user": "u-7"}).json()
    assert [item["id"] for item in by_user["interactions"]] == [tagged.id]
    counted = tenant.http.post("/v1beta/interactions:purge", json={"filter": {"labels": {"session": "s1"}}})
    assert counted.json()["purge_count"] == 2


def create_google(tenant: Tenant, labels: dict[str, Any]) -> str:
    return id_of(
        interaction(tenant.google.interactions.create(model="echo", input="from google", labels=labels))
    )
