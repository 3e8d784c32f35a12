"""The Models resource (GET /{v}/models, GET /{v}/models/{name}) through the official SDK and plain HTTP, on a
server of its own whose models.toml holds a literal route, a glob route and a route with an upstream's
address, key variable and upstream model name: the glob is not listed, and nothing of the upstream shows."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import jsonschema  # type: ignore[import-untyped]  # no stubs in the environment
import pytest
from google.genai import errors
from openapi_spec_validator import validate

from .replies import interaction
from .support import TOPOLOGIES, Stack, new_key, running_stack, sdk

SECRETS = ("upstream.invalid", "secret-path", "IX_MODELS_TEST_KEY", "hidden-upstream-name")
MODELS = """
[[models]]
match = "house-model"
backend = "openai"
base_url = "http://upstream.invalid:9/secret-path"
api_key_env = "IX_MODELS_TEST_KEY"
upstream_model = "hidden-upstream-name"

[[models]]
match = "gpt-*"
backend = "openai"

[[models]]
match = "house-echo"
backend = "echo"

[[models]]
match = "claude-house"
backend = "anthropic"
"""
LISTED = ["house-model", "house-echo", "claude-house", "echo", "echo-slow"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    workdir = tmp_path_factory.mktemp("models")
    with running_stack(workdir, models=MODELS, topology=TOPOLOGIES["tcp-embedded"]) as started:
        yield started


@pytest.fixture
def http(stack: Stack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=stack.url, headers={"x-goog-api-key": new_key()}, timeout=30) as opened:
        yield opened


def test_the_sdk_lists_the_literal_names_and_the_builtins(stack: Stack) -> None:
    models = list(sdk(stack.url, new_key()).models.list())
    assert [m.name for m in models] == [f"models/{name}" for name in LISTED]
    assert all(m.display_name for m in models)
    assert all(m.supported_actions == ["generateContent", "countTokens", "createInteraction"] for m in models)
    by_name = {m.name: m for m in models}
    assert by_name["models/house-model"].description == "Served by the openai backend"
    assert by_name["models/claude-house"].description == "Served by the anthropic backend"
    echo = by_name["models/echo"]
    assert echo.output_token_limit == 65536 and echo.input_token_limit is None
    assert "echo backend" in (echo.description or "")
    assert by_name["models/house-echo"].output_token_limit == 65536
    # a glob serves many names, none of which is one model
    assert not any("*" in (m.name or "") for m in models)


def test_the_sdk_gets_one_model(stack: Stack) -> None:
    client = sdk(stack.url, new_key())
    echo = client.models.get(model="echo")
    assert echo.name == "models/echo"
    assert echo.supported_actions == ["generateContent", "countTokens", "createInteraction"]
    assert echo.output_token_limit == 65536
    slow = client.models.get(model="models/echo-slow")
    assert slow.name == "models/echo-slow" and "50 ms" in (slow.description or "")
    assert client.models.get(model="house-model").description == "Served by the openai backend"


def test_nothing_of_the_upstream_is_shown(http: httpx.Client) -> None:
    answers = [http.get("/v1beta/models"), *(http.get(f"/v1beta/models/{name}") for name in LISTED)]
    for answer in answers:
        assert answer.status_code == 200, answer.text
        for secret in SECRETS:
            assert secret not in answer.text, (secret, answer.text)
    # Google's field names, as the Gemini API answers
    model = answers[0].json()["models"][0]
    assert set(model) == {"name", "displayName", "description", "supportedGenerationMethods"}


def test_pages_follow_their_tokens(stack: Stack, http: httpx.Client) -> None:
    pager = sdk(stack.url, new_key()).models.list(config={"page_size": 2})
    assert [m.name for m in pager.page] == ["models/house-model", "models/house-echo"]
    assert pager.config.get("page_token")  # the first page's nextPageToken, for the next call
    assert [m.name for m in pager] == [f"models/{name}" for name in LISTED]
    # both spellings, as the SDK (camelCase) and the other lists (snake_case) send them
    first = http.get("/v1beta/models", params={"page_size": 3}).json()
    assert len(first["models"]) == 3
    rest = http.get("/v1beta/models", params={"pageSize": 3, "pageToken": first["nextPageToken"]}).json()
    assert [m["name"] for m in first["models"] + rest["models"]] == [f"models/{n}" for n in LISTED]
    assert "nextPageToken" not in rest
    past = http.get("/v1beta/models", params={"page_token": "999"})
    assert past.status_code == 200 and past.json() == {"models": []}
    assert http.get("/v1beta/models", params={"pageToken": ""}).json() == http.get("/v1beta/models").json()
    # a bad value is refused even next to a good one in the other spelling
    bad_values = [{"page_token": "x1"}, {"pageSize": "-1"}, {"page_size": "two"}]
    bad_values += [{"pageToken": "3", "page_token": "x"}, {"pageSize": "2", "page_size": "-2"}]
    for bad in bad_values:
        assert http.get("/v1beta/models", params=bad).status_code == 400, bad


def test_an_unknown_model_is_a_404_naming_it(stack: Stack, http: httpx.Client) -> None:
    with pytest.raises(errors.ClientError) as raised:
        sdk(stack.url, new_key()).models.get(model="gpt-4o")
    assert raised.value.code == 404
    assert "gpt-4o" in str(raised.value.message)
    answer = http.get("/v1beta/models/models/no-such-model")
    assert answer.status_code == 404
    assert answer.json()["error"]["status"] == "NOT_FOUND"
    assert "no-such-model" in answer.json()["error"]["message"]


def test_every_version_path_and_the_vertex_form(http: httpx.Client) -> None:
    for path in ("/v1/models", "/v1alpha/models", "/v1beta1/projects/p/locations/l/models"):
        answer = http.get(path)
        assert answer.status_code == 200, path
        assert len(answer.json()["models"]) == len(LISTED)
    assert http.get("/v1/projects/p/locations/l/models/echo").json()["name"] == "models/echo"
    # the name with its `models/` prefix, as a client may put it in the path itself
    assert http.get("/v1beta/models/models/echo").json()["name"] == "models/echo"
    assert http.get("/nope/models").status_code == 404
    assert http.options("/v1beta/models").headers["allow"] == "GET, OPTIONS"


def test_the_api_key_is_required(stack: Stack) -> None:
    for path in ("/v1beta/models", "/v1beta/models/echo", "/v1beta/models/nothing"):
        answer = httpx.get(stack.url + path)
        assert answer.status_code == 401, path
        assert answer.json()["error"]["status"] == "UNAUTHENTICATED"
    # every way the other resources take the key
    key = new_key()
    assert httpx.get(stack.url + "/v1beta/models", params={"key": key}).status_code == 200
    bearer = httpx.get(stack.url + "/v1beta/models/echo", headers={"Authorization": f"Bearer {key}"})
    assert bearer.status_code == 200


def test_a_listed_model_can_be_used(stack: Stack) -> None:
    client = sdk(stack.url, new_key())
    listed = [m.name for m in client.models.list()]
    assert "models/house-echo" in listed
    made = interaction(client.interactions.create(model="house-echo", input="one two"))
    assert made.status == "completed"


def test_the_document_describes_the_answers(http: httpx.Client) -> None:
    document = http.get("/openapi.json").json()
    validate(document)
    for prefix, suffix in (
        ("/{version}", ""),
        ("/{version}/projects/{project}/locations/{location}", "Vertex"),
    ):
        assert document["paths"][f"{prefix}/models"]["get"]["operationId"] == "ListModels" + suffix
        assert document["paths"][f"{prefix}/models/{{name}}"]["get"]["operationId"] == "GetModel" + suffix
    answers = {
        "ModelList": [
            http.get("/v1beta/models", params={"pageSize": 2}).json(),
            http.get("/v1/models").json(),
        ],
        "Model": [http.get(f"/v1beta/models/{name}").json() for name in LISTED],
        "ErrorBody": [http.get("/v1beta/models/nothing").json()],
    }
    for name, replies in answers.items():
        checker = jsonschema.Draft202012Validator({**document, "$ref": f"#/components/schemas/{name}"})
        for reply in replies:
            assert checker.is_valid(reply), (name, reply)
