"""The models list in both dialects from one server: the openai SDK with the base URL the README gives it
(`<server>/v1`, and `<server>/openai/v1`) and google-genai with the server's root both call `GET /v1/models`
and `GET /v1/models/{id}`, and each gets its own shape (api/models.py hands the requests that speak OpenAI's
dialect, api/openai/dialect.py, to api/openai/models.py). Then the rule at its edges over plain HTTP, and
every Google route under `/v1` still reached next to OpenAI's.

The server is this module's own, in keys mode (a Bearer key that is not listed is OpenAI's 401), with a
configured model whose name holds a slash (the openai SDK sends it as `%2F`), and a glob (not listed)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import openai
import pytest
from google import genai
from google.genai import errors, types

from ..inproc import ThreadedApp, threaded
from ..support import tls_context

KEY = "models-openai-test-key"
MODELS = """
[[models]]
match = "house/echo"
backend = "echo"

[[models]]
match = "house-gpt"
backend = "openai"

[[models]]
match = "gpt-*"
backend = "openai"
"""
#: the listed models and the backend kind each is served by (OpenAI's `owned_by`)
OWNERS = {"house/echo": "echo", "house-gpt": "openai", "echo": "echo", "echo-slow": "echo-slow"}
BASES = ["/v1", "/openai/v1"]
OPENAI_KEYS = {"id", "object", "created", "owned_by"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedApp]:
    config = {"auth": {"mode": "keys", "keys": {hashlib.sha256(KEY.encode()).hexdigest(): "models"}}}
    with threaded(Path(tmp_path_factory.mktemp("models-openai")), config=config, models=MODELS) as app:
        yield app


@pytest.fixture
def paths() -> list[str]:
    """The paths the SDKs' calls went to, in order."""
    return []


@pytest.fixture
def oai(served: ThreadedApp, paths: list[str]) -> Iterator[openai.OpenAI]:
    """The openai SDK on `<server>/v1`, its answers validated against its own types, retries off."""
    with _openai(served.url + "/v1", paths) as client:
        yield client


def _openai(base_url: str, paths: list[str]) -> openai.OpenAI:
    def seen(request: httpx2.Request) -> None:
        paths.append(request.url.raw_path.decode())

    http = httpx2.Client(event_hooks={"request": [seen]})
    return openai.OpenAI(
        base_url=base_url, api_key=KEY, max_retries=0, http_client=http, _strict_response_validation=True
    )


@pytest.fixture
def google(served: ThreadedApp, paths: list[str]) -> Iterator[genai.Client]:
    """google-genai with the server's root and its own default version (what a user gets), retries off."""

    def seen(request: httpx.Request) -> None:
        paths.append(request.url.raw_path.decode())

    with httpx.Client(event_hooks={"request": [seen]}, verify=tls_context(), timeout=30) as http:
        options = types.HttpOptions(
            base_url=served.url, retry_options=types.HttpRetryOptions(attempts=1), httpx_client=http
        )
        client = genai.Client(api_key=KEY, http_options=options)
        try:
            yield client
        finally:
            client.close()


@pytest.mark.parametrize("base", BASES)
def test_the_openai_sdk_lists_in_openais_shape(served: ThreadedApp, paths: list[str], base: str) -> None:
    with _openai(served.url + base, paths) as client:
        listed = list(client.models.list())
    assert paths == [f"{base}/models"]
    assert {model.id: model.owned_by for model in listed} == OWNERS
    assert [model.id for model in listed] == list(OWNERS)  # the file's order, then the built-ins
    assert all(model.object == "model" and model.created == 0 for model in listed)
    # OpenAI's fields and nothing else, as its API answers
    body = httpx.get(served.url + base + "/models", headers={"Authorization": f"Bearer {KEY}"}).json()
    assert set(body) == {"object", "data"} and body["object"] == "list"
    assert all(set(model) == OPENAI_KEYS for model in body["data"])


@pytest.mark.parametrize("base", BASES)
def test_the_openai_sdk_retrieves_one_model(served: ThreadedApp, paths: list[str], base: str) -> None:
    with _openai(served.url + base, paths) as client:
        echo = client.models.retrieve("echo")
        slashed = client.models.retrieve("house/echo")
        gpt = client.models.retrieve("house-gpt")
    assert (echo.id, echo.owned_by, echo.object) == ("echo", "echo", "model")
    assert (slashed.id, slashed.owned_by) == ("house/echo", "echo")
    assert gpt.owned_by == "openai"
    # the SDK encodes the slash of a name: the path is taken as sent
    assert paths[1] == f"{base}/models/house%2Fecho"


@pytest.mark.parametrize("base", BASES)
def test_an_unknown_model_is_openais_404(served: ThreadedApp, paths: list[str], base: str) -> None:
    with _openai(served.url + base, paths) as client:
        # Google's `models/` prefix is no part of an OpenAI id; a glob's names are not listed models
        for name in ("no-such-model", "models/echo", "gpt-4o"):
            with pytest.raises(openai.NotFoundError) as raised:
                client.models.retrieve(name)
            body: Any = raised.value.body
            assert body["code"] == "model_not_found", body
            assert (body["type"], body["param"]) == ("invalid_request_error", "model")
            assert name in body["message"]


def test_a_key_that_is_not_listed_is_openais_401(served: ThreadedApp) -> None:
    for base in BASES:
        with openai.OpenAI(base_url=served.url + base, api_key="not-listed", max_retries=0) as client:
            with pytest.raises(openai.AuthenticationError) as raised:
                client.models.list()
            with pytest.raises(openai.AuthenticationError):
                client.models.retrieve("echo")
        body: Any = raised.value.body
        assert (body["type"], body["code"]) == ("authentication_error", "invalid_api_key"), body


def test_the_google_sdk_gets_googles_shape_on_the_same_paths(
    served: ThreadedApp, google: genai.Client, paths: list[str]
) -> None:
    models = list(google.models.list())
    assert [model.name for model in models] == [f"models/{name}" for name in OWNERS]
    assert all(
        model.supported_actions == ["generateContent", "countTokens", "createInteraction"] for model in models
    )
    echo = google.models.get(model="echo")
    assert echo.name == "models/echo" and echo.output_token_limit == 65536
    assert google.models.get(model="house/echo").name == "models/house/echo"
    with pytest.raises(errors.ClientError) as raised:
        google.models.get(model="no-such-model")
    assert raised.value.code == 404 and raised.value.status == "NOT_FOUND"
    # the very paths the openai SDK calls
    assert paths[:3] == ["/v1/models", "/v1/models/echo", "/v1/models/house/echo"]


def _shape(answer: httpx.Response) -> str:
    body = answer.json()
    if "object" in body or ("error" in body and "type" in body["error"]):
        return "openai"
    assert "models" in body or "name" in body or "status" in body.get("error", {}), body
    return "google"


def test_who_gets_which_shape(served: ThreadedApp) -> None:
    bearer = {"Authorization": f"Bearer {KEY}"}
    google_client = {"x-goog-api-client": "google-genai-sdk/3.6.1 gl-python/3.11"}
    cases: list[tuple[str, dict[str, str], dict[str, str], str]] = [
        ("/v1/models", bearer, {}, "openai"),
        ("/v1/models/echo", bearer, {}, "openai"),
        # anything of Google's makes it Google's, even with a Bearer key
        ("/v1/models", {**bearer, **google_client}, {}, "google"),
        ("/v1/models/echo", {**bearer, **google_client}, {}, "google"),
        ("/v1/models", {**bearer, "x-goog-api-key": KEY}, {}, "google"),
        ("/v1/models", bearer, {"key": KEY}, "google"),
        ("/v1/models", {"x-goog-api-key": KEY}, {}, "google"),
        # no key at all: Google's 401, as before OpenAI's shape was served
        ("/v1/models", {}, {}, "google"),
        # other versions and the Vertex form are Google's only
        ("/v1beta/models", bearer, {}, "google"),
        ("/v1/projects/p/locations/l/models", bearer, {}, "google"),
        ("/v1/projects/p/locations/l/models/echo", bearer, {}, "google"),
        # under /openai/v1 everything is OpenAI's
        ("/openai/v1/models", {"x-goog-api-key": KEY, **google_client}, {}, "openai"),
        ("/openai/v1/models", {}, {}, "openai"),
    ]
    with httpx.Client(base_url=served.url, timeout=30) as http:
        for path, headers, params, expected in cases:
            answer = http.get(path, headers=headers, params=params)
            assert _shape(answer) == expected, (path, headers, params, answer.text)
            assert answer.status_code == (401 if not headers else 200), (path, headers, answer.text)


def test_every_google_route_under_v1_is_still_reached(served: ThreadedApp) -> None:
    """litestar does not go back from a literal first segment to `{version}`: a route of OpenAI's under
    `/v1` with a path parameter would hide every Google route of `/{version}/...` for `v1` (a 404 of the
    router, `No route`), as a route of ours for `/v1/models/{id}` would."""
    routes = [route for route in served.app.app.routes if route.path.startswith("/{version:str}/")]
    assert len(routes) > 5
    with httpx.Client(base_url=served.url, headers={"x-goog-api-key": KEY}, timeout=30) as http:
        for route in routes:
            path = "/v1" + re.sub(r"\{[^}]*\}", "x", route.path.removeprefix("/{version:str}"))
            for method in sorted(set(route.methods) - {"OPTIONS", "HEAD"}):
                answer = http.request(method, path, json={} if method in ("POST", "PATCH") else None)
                message = answer.json()["error"]["message"] if answer.status_code == 404 else ""
                assert not message.startswith("No route"), (method, path, message)
