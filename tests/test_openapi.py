"""The API is described and readable: /openapi.json is a valid OpenAPI document that says what the server
really does (checked against the running server where it can be), and /docs renders it from our own files."""

from __future__ import annotations

import json
import shutil
import subprocess
from html.parser import HTMLParser
from typing import Any

import httpx
import jsonschema  # type: ignore[import-untyped]  # no stubs in the environment
import pytest
from openapi_spec_validator import validate

from .sse import events
from .support import new_key

VERTEX = "/{version}/projects/{project}/locations/{location}"
OPERATIONS = {
    ("/interactions", "post"): "CreateInteraction",
    ("/interactions/{id}", "get"): "getInteractionById",
    ("/interactions/{id}", "delete"): "deleteInteraction",
    ("/interactions/{id}/cancel", "post"): "cancelInteractionById",
}
#: the error statuses each operation can answer, from errors.py and the handlers
ERRORS = {
    "CreateInteraction": {"400", "401", "404", "408", "413", "429", "500", "502", "503", "504"},
    "getInteractionById": {"400", "401", "404", "500", "503"},
    "cancelInteractionById": {"400", "401", "404", "500", "503"},
    "deleteInteraction": {"401", "404", "500", "503"},
}


@pytest.fixture(scope="module")
def document(base_url: str) -> dict[str, Any]:
    response = httpx.get(f"{base_url}/openapi.json")
    assert response.status_code == 200
    result: dict[str, Any] = response.json()
    return result


def operations(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """operationId -> operation, of the Google and the Vertex paths."""
    found = {}
    for prefix, suffix in (("/{version}", ""), (VERTEX, "Vertex")):
        for (path, method), name in OPERATIONS.items():
            operation = document["paths"][prefix + path][method]
            assert operation["operationId"] == name + suffix
            found[name + suffix] = operation
    return found


def parameters(operation: dict[str, Any]) -> set[tuple[str, str]]:
    """(in, name) of an operation's own parameters (the path ones are on its path item)."""
    return {(p["in"], p["name"]) for p in operation.get("parameters", [])}


def schema_validator(document: dict[str, Any], name: str) -> jsonschema.Draft202012Validator:
    # the document is the root resource, so its "#/components/..." references resolve
    return jsonschema.Draft202012Validator({**document, "$ref": f"#/components/schemas/{name}"})


# ---------------------------------------------------------------------------------------------------------
# the document


def test_document_is_valid_openapi(document: dict[str, Any]) -> None:
    assert document["openapi"] == "3.1.0"
    validate(document)  # raises with the first problem


def test_no_default_contradicts_its_schema(document: dict[str, Any]) -> None:
    for name, schema in document["components"]["schemas"].items():
        for field, prop in schema.get("properties", {}).items():
            if "default" in prop:
                # the property's schema, with the document as its root so that references resolve
                check = {**document, **{k: v for k, v in prop.items() if k != "default"}}
                assert jsonschema.Draft202012Validator(check).is_valid(prop["default"]), f"{name}.{field}"


def test_security_schemes_are_what_the_server_accepts(document: dict[str, Any], base_url: str) -> None:
    schemes = document["components"]["securitySchemes"]
    assert schemes["ApiKeyHeader"] == {"type": "apiKey", "in": "header", "name": "x-goog-api-key"}
    assert schemes["ApiKeyQuery"] == {"type": "apiKey", "in": "query", "name": "key"}
    assert schemes["BearerToken"]["type"] == "http"
    assert schemes["BearerToken"]["scheme"] == "bearer"
    # any one of them will do
    assert document["security"] == [{"ApiKeyHeader": []}, {"ApiKeyQuery": []}, {"BearerToken": []}]
    for path in ("/healthz", "/readyz", "/openapi.json", "/docs"):
        assert document["paths"][path]["get"]["security"] == [], path
    # and the server does accept each of them
    url = f"{base_url}/v1beta/interactions"
    body = {"model": "echo", "input": "hi"}
    key = new_key()
    assert httpx.post(url, json=body).status_code == 401
    assert httpx.post(url, json=body, headers={"x-goog-api-key": key}).status_code == 200
    assert httpx.post(url, json=body, params={"key": key}).status_code == 200
    assert httpx.post(url, json=body, headers={"Authorization": f"Bearer {key}"}).status_code == 200


def test_headers_and_query_parameters(document: dict[str, Any]) -> None:
    for name, operation in operations(document).items():
        declared = parameters(operation)
        if name.startswith("CreateInteraction"):
            assert declared == {("header", "Idempotency-Key")}
        elif name.startswith("getInteractionById"):
            assert {
                ("query", "stream"),
                ("query", "last_event_id"),
                ("query", "include_input"),
                ("header", "Last-Event-ID"),
            } <= declared
        else:
            assert declared == set(), name
    item = document["paths"][VERTEX + "/interactions/{id}"]["parameters"]
    assert {(p["in"], p["name"]) for p in item} == {
        ("path", n) for n in ("version", "project", "location", "id")
    }


def test_documented_headers_are_honoured(base_url: str) -> None:
    headers = {"x-goog-api-key": new_key()}
    url = f"{base_url}/v1beta/interactions"
    body = {"model": "echo", "input": "one two three", "stream": True}
    with httpx.stream("POST", url, json=body, headers={**headers, "Idempotency-Key": "k1"}) as response:
        first = list(events(response))
    interaction_id = first[0]["interaction"]["id"]
    # the same key and body: the same interaction (its events again); another body: 400
    with httpx.stream("POST", url, json=body, headers={**headers, "Idempotency-Key": "k1"}) as response:
        assert next(events(response))["interaction"]["id"] == interaction_id
    other = httpx.post(url, json={**body, "input": "four"}, headers={**headers, "Idempotency-Key": "k1"})
    assert other.status_code == 400
    # Last-Event-ID resumes a stream after that event
    resume = {**headers, "Last-Event-ID": first[1]["event_id"]}
    with httpx.stream(
        "GET", f"{url}/{interaction_id}", params={"stream": "true"}, headers=resume
    ) as response:
        assert [e["event_id"] for e in events(response)] == [e["event_id"] for e in first[2:]]
    alone = httpx.get(f"{url}/{interaction_id}", params={"last_event_id": "evt_1"}, headers=headers)
    assert alone.status_code == 400


def test_error_responses(document: dict[str, Any]) -> None:
    for name, operation in operations(document).items():
        responses = operation["responses"]
        assert set(responses) - {"200"} == ERRORS[name.removesuffix("Vertex")], name
        for status, response in responses.items():
            assert response["description"], (name, status)
            if status != "200":
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorBody"}
    create = operations(document)["CreateInteraction"]
    assert "Retry-After" in create["responses"]["429"]["headers"]
    # Redis away: every operation answers 503 with a Retry-After (tests/test_redis_outage.py)
    for name, operation in operations(document).items():
        assert operation["responses"]["503"]["headers"] == {
            "Retry-After": {"$ref": "#/components/headers/RetrySoon"}
        }, name
    assert document["components"]["headers"]["RetrySoon"]["required"] is True


def test_every_response_has_a_description(document: dict[str, Any]) -> None:
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            for status, response in operation["responses"].items():
                assert response.get("description"), (path, method, status)


def test_streams_are_event_streams(document: dict[str, Any]) -> None:
    found = operations(document)
    replies = {
        "CreateInteraction": "Interaction",
        "getInteractionById": "StoredInteraction",
        "CreateInteractionVertex": "Interaction",
    }
    for name, reply in replies.items():
        content = found[name]["responses"]["200"]["content"]
        assert content["text/event-stream"]["schema"] == {"$ref": "#/components/schemas/ServerSentEvent"}
        assert content["application/json"]["schema"] == {"$ref": f"#/components/schemas/{reply}"}
    # a stream's schema is one event's SSE fields (as OpenAPI 3.2 and schemathesis read it), its data an Event
    data = document["components"]["schemas"]["ServerSentEvent"]["properties"]["data"]
    assert data["contentMediaType"] == "application/json"
    assert data["contentSchema"] == {"$ref": "#/components/schemas/Event"}


def test_a_real_stream_matches_its_schema(document: dict[str, Any], base_url: str) -> None:
    sse = schema_validator(document, "ServerSentEvent")
    body = {"model": "echo", "input": "one two", "stream": True}
    with httpx.stream(
        "POST", f"{base_url}/v1beta/interactions", json=body, headers={"x-goog-api-key": new_key()}
    ) as response:
        text = response.read().decode()
    frames = [block for block in text.split("\n\n") if block.strip()]
    assert len(frames) >= 5
    for block in frames:
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        assert fields.keys() == {"event", "data"}, block
        assert sse.is_valid(fields), block
        event = json.loads(fields["data"])
        assert event["event_type"] == fields["event"]
        assert schema_validator(document, "Event").is_valid(event), block


def test_what_every_reply_holds_is_required(document: dict[str, Any], base_url: str) -> None:
    """A field is marked required exactly when every reply holds it: the replies of a foreground, a
    `store: false`, a background and a streamed create, and of get and cancel."""
    headers = {"x-goog-api-key": new_key()}
    url = f"{base_url}/v1beta/interactions"
    created = [
        httpx.post(url, json={"input": "hi", **extra}, headers=headers).json()
        for extra in ({"model": "echo"}, {"agent": "echo"}, {"model": "echo", "store": False})
    ]
    created.append(
        httpx.post(url, json={"model": "echo", "input": "hi", "background": True}, headers=headers).json()
    )
    with httpx.stream(
        "POST", url, json={"model": "echo-slow", "input": "a b", "stream": True}, headers=headers
    ) as r:
        streamed = [e["interaction"] for e in events(r) if "interaction" in e]
    job = httpx.post(
        url, json={"model": "echo-slow", "input": "x " * 50, "background": True}, headers=headers
    )
    stored = [
        httpx.get(f"{url}/{created[0]['id']}", headers=headers).json(),
        httpx.post(f"{url}/{job.json()['id']}/cancel", headers=headers).json(),
    ]
    schemas = document["components"]["schemas"]
    always = set.intersection(*(set(reply) for reply in [*created, *streamed, *stored]))
    assert set(schemas["Interaction"]["required"]) == always
    # and `model` or `agent`, whichever the create gave
    assert [branch["required"] for branch in schemas["Interaction"]["oneOf"]] == [["model"], ["agent"]]
    # a stored one always has its id and timeline (and `usage` once it has run, which these two have)
    assert schemas["StoredInteraction"]["required"] == ["id", "steps"]
    assert {"id", "steps"} <= set.intersection(*(set(reply) for reply in stored))
    for reply in [*created, *streamed]:
        assert schema_validator(document, "Interaction").is_valid(reply), reply
    for reply in stored:
        assert schema_validator(document, "StoredInteraction").is_valid(reply), reply


def test_a_create_links_to_what_can_be_done_with_it(document: dict[str, Any]) -> None:
    found = operations(document)
    for suffix, path_params in (("", {"version"}), ("Vertex", {"version", "project", "location"})):
        links = found["CreateInteraction" + suffix]["responses"]["200"]["links"]
        assert {link["operationId"] for link in links.values()} == {
            name + suffix for name in ("getInteractionById", "cancelInteractionById", "deleteInteraction")
        }
        for link in links.values():
            assert link["parameters"] == {
                **{name: f"$request.path.{name}" for name in path_params},
                "id": "$response.body#/id",
            }


def test_error_body_matches_the_server(document: dict[str, Any], base_url: str) -> None:
    response = httpx.get(f"{base_url}/v1beta/interactions/nope", headers={"x-goog-api-key": new_key()})
    assert response.status_code == 404
    assert schema_validator(document, "ErrorBody").is_valid(response.json())


def test_vertex_paths_are_served(document: dict[str, Any], base_url: str) -> None:
    assert len(operations(document)) == 8
    headers = {"x-goog-api-key": new_key()}
    prefix = f"{base_url}/v1beta1/projects/p/locations/l/interactions"
    made = httpx.post(prefix, json={"model": "echo", "input": "via vertex"}, headers=headers)
    assert made.status_code == 200, made.text
    assert schema_validator(document, "Interaction").is_valid(made.json())
    assert httpx.get(f"{prefix}/{made.json()['id']}", headers=headers).status_code == 200


def test_health_and_readiness(document: dict[str, Any], base_url: str) -> None:
    health = document["paths"]["/healthz"]["get"]["responses"]
    assert health["200"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Health"}
    ready = document["paths"]["/readyz"]["get"]["responses"]
    assert set(ready) == {"200", "503"}
    readiness = document["components"]["schemas"]["Readiness"]
    assert {"status", "reason"} <= set(readiness["properties"])
    for path, name in (("/healthz", "Health"), ("/readyz", "Readiness")):
        assert schema_validator(document, name).is_valid(httpx.get(base_url + path).json())
    assert schema_validator(document, "Readiness").is_valid({"status": "not ready", "reason": "no worker"})


# ---------------------------------------------------------------------------------------------------------
# `input`

TEXT = {"type": "text", "text": "hello"}
ACCEPTED_INPUTS: list[Any] = [
    "hello",
    TEXT,
    [TEXT, {"type": "text", "text": "again"}],
    {"type": "user_input", "content": [TEXT]},
    [{"type": "user_input", "content": [TEXT]}],
    [{"type": "user_input", "content": "hello"}],
]
REFUSED_INPUTS: list[Any] = [None, "", [], 3, ["hello"]]


def test_input_is_the_union(document: dict[str, Any]) -> None:
    create = document["components"]["schemas"]["CreateRequest"]
    assert create["properties"]["input"] == {"$ref": "#/components/schemas/Input"}
    assert "input" in create["required"]
    members = document["components"]["schemas"]["Input"]["anyOf"]
    refs = {m.get("$ref") or m.get("type") + ":" + m.get("items", {}).get("$ref", "") for m in members}
    assert refs == {
        "string:",
        "#/components/schemas/Content",
        "#/components/schemas/Step",
        "array:#/components/schemas/Content",
        "array:#/components/schemas/Step",
    }


@pytest.mark.parametrize("value", ACCEPTED_INPUTS)
def test_documented_inputs_are_accepted(document: dict[str, Any], base_url: str, value: Any) -> None:
    body = {"model": "echo", "input": value}
    assert schema_validator(document, "CreateRequest").is_valid(body)
    response = httpx.post(f"{base_url}/v1beta/interactions", json=body, headers={"x-goog-api-key": new_key()})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("value", REFUSED_INPUTS)
def test_refused_inputs_are_outside_the_schema(document: dict[str, Any], base_url: str, value: Any) -> None:
    body = {"model": "echo", "input": value}
    assert not schema_validator(document, "CreateRequest").is_valid(body)
    response = httpx.post(f"{base_url}/v1beta/interactions", json=body, headers={"x-goog-api-key": new_key()})
    assert response.status_code == 400, response.text


# ---------------------------------------------------------------------------------------------------------
# /docs


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href") and value:
                self.urls.append(value)


EXPECTED_TYPES = {".js": "text/javascript", ".css": "text/css", ".png": "image/png"}


def test_docs_page_uses_only_our_assets(base_url: str) -> None:
    page = httpx.get(f"{base_url}/docs")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    links = _Links()
    links.feed(page.text)
    assert len(links.urls) >= 3
    scripts = ""
    for url in links.urls:
        # same origin: a path on this server, never another host
        assert url.startswith("/") and not url.startswith("//"), url
        asset = httpx.get(base_url + url)
        assert asset.status_code == 200, url
        suffix = url[url.rfind(".") :]
        assert asset.headers["content-type"].startswith(EXPECTED_TYPES[suffix]), url
        assert len(asset.content) > 200, url
        if suffix == ".js":
            scripts += asset.text
    assert "swagger-ui-bundle.js" in page.text
    assert '"/openapi.json"' in scripts
    assert "https://" not in page.text


def test_docs_assets_are_only_the_known_ones(base_url: str) -> None:
    assert len(httpx.get(f"{base_url}/docs/assets/swagger-ui-bundle.js").content) > 500_000
    for name in ("index.html", "..%2F..%2Fpyproject.toml", "swagger-ui.js.map"):
        assert httpx.get(f"{base_url}/docs/assets/{name}").status_code == 404, name


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs a headless chromium")
def test_docs_page_renders_in_a_browser(base_url: str, tmp_path: Any) -> None:
    """Swagger UI before 5 refuses OpenAPI 3.1 ("Unable to render this definition"): render it for real."""
    result = subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={tmp_path}",
            "--virtual-time-budget=10000",
            "--dump-dom",
            f"{base_url}/docs",
        ],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert "Interactions API (self-hosted)" in result.stdout, result.stderr[-2000:]
    assert "getInteractionById" in result.stdout or "/interactions/{id}" in result.stdout
    assert "Unable to render" not in result.stdout
