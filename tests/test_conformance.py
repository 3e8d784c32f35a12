"""The OpenAPI document agrees with the server: schemathesis generates requests from /openapi.json, sends them
to the running server on loopback, and checks each answer against what the document says.

Its run is bounded and repeatable: a fixed number of examples per operation, derandomized generation with a
fixed seed, no example database, and no `max-time` (which schemathesis spends whole, fuzzing again until it
runs out); pytest's timeout below is the deadline. The coverage phase sends every boundary and unexpected
method the document implies, fuzzing a few examples of each operation, and the stateful phase follows the
document's links from a create to the get, cancel and delete of what it made.
"""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import pytest
import schemathesis
from schemathesis.engine import events, from_schema

from .support import new_key

#: every check that says whether the server does what the document says. Left off: `ignored_auth` (in the
#: default open mode any non-empty key is a valid one, so "invalid credentials" are accepted by design) and
#: `object_level_authorization` (needs a second identity; tests/test_tenancy.py covers tenants).
CHECKS = [
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "response_headers_conformance",
    "negative_data_rejection",
    "positive_data_acceptance",
    "missing_required_header",
    "unsupported_method",
    "allow_header_conformance",
    "use_after_free",
    "ensure_resource_availability",
]
#: where a request the schema allows can still be refused for a reason no schema can state, so that
#: "schema-valid data is accepted" does not hold: create (a model name that is not configured), get
#: (`last_event_id` without `stream=true`, or an event id the log does not hold), cancel (an interaction that
#: has already finished), a webhook's create and update (a URI whose host resolves to a private address, or
#: to nothing), and its list (a page token this server did not make), an agent's create (a `base_agent`
#: that is not configured, an id taken) and its list (a page token), the interactions' list (a page token,
#: a date-time the schema's format allows and Python's parser does not) and purge (the same date-times),
#: a trigger's create (a cron expression, a zone, an interaction a create would refuse), its list (a page
#: token, a filter), its update (an update_mask naming no field) and its executions' list (a page token),
#: the usage report (a start after its end, a range of more than 400 days), and generateContent's three
#: methods (a model that is not configured, no contents, a part of no kind, a refused setting).
#: Every other check runs on them.
_STATEFUL_REFUSALS = (
    "^(CreateInteraction|getInteractionById|cancelInteractionById|CreateWebhook|UpdateWebhook|ListWebhooks"
    "|CreateAgent|ListAgents|ListInteractions|PurgeInteractions|CreateTrigger|ListTriggers|UpdateTrigger"
    "|ListTriggerExecutions|GetUsage|GenerateContent|StreamGenerateContent|CountTokens)"
)


def config(max_examples: int = 25) -> dict[str, Any]:
    return {
        "seed": 20260520,
        "headers": {"x-goog-api-key": new_key()},
        "request-timeout": 10,
        "generation": {"max-examples": max_examples, "deterministic": True, "database": "none"},
        "checks": {"enabled": False, **{name: {"enabled": True} for name in CHECKS}},
        "operations": [
            {
                "include-operation-id-regex": _STATEFUL_REFUSALS,
                "checks": {"positive_data_acceptance": {"enabled": False}},
            },
            # the Vertex form of each path runs the same handler as Google's form: a few examples there
            # (its own routing and parameters) keep the run within its deadline as resources are added
            {"include-path-regex": "/projects/", "generation": {"max-examples": 5}},
            # our extension's list, purge and operation find nothing for a new key: few examples say as much
            {
                "include-operation-id-regex": "^(ListInteractions|PurgeInteractions|GetOperation|GetUsage)",
                "generation": {"max-examples": 5},
            },
        ],
    }


def load(base_url: str, settings: dict[str, Any]) -> Any:
    schema = schemathesis.openapi.from_url(
        f"{base_url}/openapi.json", config=schemathesis.Config.from_dict(settings)
    )
    keys = itertools.count()

    @schema.hook
    def map_headers(context: Any, headers: dict[str, Any] | None) -> dict[str, Any] | None:
        # a fresh Idempotency-Key for each generated create: a repeat after the interaction was deleted
        # is a 404 after a second's wait for the record (test_a_repeated_create_answers_at_once below)
        if headers and "Idempotency-Key" in headers:
            headers["Idempotency-Key"] = f"conformance-{next(keys)}"
        return headers

    return schema


def failures(event: events.EngineEvent) -> list[str]:
    """What schemathesis found wrong in one event of its run, each with a curl line that reproduces it."""
    found = []
    if isinstance(event, events.ScenarioFinished):
        for checks in event.recorder.checks.values():
            for check in checks:
                if check.failure_info is not None:
                    failure = check.failure_info.failure
                    found.append(
                        f"{event.phase.value} {failure.operation}: {failure.title}\n{failure.message}\n"
                        f"{check.failure_info.code_sample}"
                    )
    elif isinstance(event, events.NonFatalError):
        found.append(f"error in {event.label}: {event.info.format()}")
    elif isinstance(event, events.FatalError):
        found.append(f"fatal: {event.exception!r}")
    return found


# a deadline for a hang, not a speed target: alone the run takes about 75 s, beside the rest of the suite on
# two cores up to twice that
@pytest.mark.timeout(300)
def test_the_server_does_what_its_document_says(base_url: str) -> None:
    problems: list[str] = []
    finished: list[events.EngineFinished] = []
    tested: set[str] = set()
    for event in from_schema(load(base_url, config())).execute():
        problems += failures(event)
        if isinstance(event, events.ScenarioFinished) and event.recorder.cases:
            tested.add(event.phase.value)
        if isinstance(event, events.EngineFinished):
            finished.append(event)
    assert not problems, "\n\n".join(dict.fromkeys(problems))
    assert finished and finished[0].stop_reason == "completed"
    assert tested == {"examples", "coverage", "fuzzing", "stateful"}


def test_streams_are_checked_against_their_schema(base_url: str) -> None:
    """The fuzzer seldom asks for the stream of an interaction that exists: ask for both kinds here."""
    settings = config()
    schema = load(base_url, settings)
    headers = settings["headers"]
    made = httpx.post(
        f"{base_url}/v1beta/interactions", json={"model": "echo", "input": "one two"}, headers=headers
    )
    replay = schema["/{version}/interactions/{id}"]["GET"].Case(
        path_parameters={"version": "v1beta", "id": made.json()["id"]}, query={"stream": True}
    )
    live = schema["/{version}/interactions"]["POST"].Case(
        path_parameters={"version": "v1beta"},
        body={"model": "echo", "input": "three four", "stream": True},
        media_type="application/json",
    )
    for case in (replay, live):
        response = case.call_and_validate(headers=headers)
        assert response.headers["content-type"][0].startswith("text/event-stream")
        assert response.text.count("\n\nevent: ") >= 4


@pytest.mark.parametrize("path", ["/v1beta/interactions/x", "/v1/projects/p/locations/l/interactions/x"])
def test_options_lists_every_method_of_the_path(base_url: str, path: str) -> None:
    response = httpx.options(base_url + path)
    assert response.status_code == 204
    assert response.headers["allow"] == "DELETE, GET, OPTIONS"


@pytest.mark.parametrize(
    "query", ["include_input=false&includeInput=maybe", "stream=true&include_input=maybe"]
)
def test_a_bad_flag_is_refused_whatever_comes_with_it(base_url: str, query: str) -> None:
    headers = {"x-goog-api-key": new_key()}
    made = httpx.post(
        f"{base_url}/v1beta/interactions", json={"model": "echo", "input": "hi"}, headers=headers
    )
    response = httpx.get(f"{base_url}/v1beta/interactions/{made.json()['id']}?{query}", headers=headers)
    assert response.status_code == 400
    assert "maybe" in response.json()["error"]["message"]


def test_a_key_whose_interaction_was_deleted_makes_a_new_one(base_url: str) -> None:
    """A create never answers 404 for its key: once the key's interaction is deleted, the key is free, the
    next create with it makes a new interaction, and a repeat after that answers that one."""
    headers = {"x-goog-api-key": new_key(), "Idempotency-Key": "once"}
    url = f"{base_url}/v1beta/interactions"
    body: dict[str, Any] = {"model": "echo", "input": "hi"}
    first = httpx.post(url, json=body, headers=headers)
    assert httpx.delete(f"{url}/{first.json()['id']}", headers=headers).status_code == 200
    again = httpx.post(url, json=body, headers=headers, timeout=3)
    assert again.status_code == 200 and again.json()["id"] != first.json()["id"]
    repeat = httpx.post(url, json=body, headers=headers, timeout=3)
    assert repeat.status_code == 200 and repeat.json()["id"] == again.json()["id"]


def test_a_refused_create_leaves_its_key_free(base_url: str) -> None:
    """A create refused before it is stored records nothing for its key: the repeat is refused the same
    way, at once, and the key then makes the corrected request's interaction."""
    headers = {"x-goog-api-key": new_key(), "Idempotency-Key": "once"}
    url = f"{base_url}/v1beta/interactions"
    body: dict[str, Any] = {"model": "echo", "input": "hi", "previous_interaction_id": "not an id"}
    for _ in range(2):
        assert httpx.post(url, json=body, headers=headers, timeout=3).status_code == 404
    body.pop("previous_interaction_id")
    assert httpx.post(url, json=body, headers=headers, timeout=3).status_code == 200
