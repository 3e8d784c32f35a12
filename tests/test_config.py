"""Configuration mistakes are one clear line: `settings.load()` unit tests, then the product as started.

The unit tests call `load()` with temporary files and an explicit environment. Requests to a model whose
key variable is unset go to the app in this process (tests/inproc.py). The end-to-end ones run
`python -m server` with a bad file or variable and expect what a user should see: exit status 2, one
line on stderr naming the file (or variable) and the field, no traceback, and nothing left running; and
the warning a start prints for a route whose key is unset.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from server import settings
from server.api.errors import upstream_error
from server.backend_kinds import KINDS
from server.config_errors import ConfigError
from server.settings import EchoSettings, ModelRoute, parse_bool
from server.store import jobs
from server.upstream.base import UpstreamError
from server.upstream.routing import Router, Unkeyed
from tests.fakes.http import FakeServer
from tests.fakes.openai import openai_text_script

from .inproc import serving
from .support import ROOT, new_key
from .upstream.helpers import request, user

# ---------------------------------------------------------------------------------------------------------
# Helpers


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    return path


def load_error(environ: dict[str, str]) -> str:
    """The ConfigError's text, checked to be one line."""
    with pytest.raises(ConfigError) as caught:
        settings.load(environ)
    message = str(caught.value)
    assert "\n" not in message and message.strip() == message, message
    return message


def config_error(tmp_path: Path, text: str, variable: str = "IX_CONFIG") -> tuple[str, Path]:
    path = write(tmp_path, "server.toml" if variable == "IX_CONFIG" else "models.toml", text)
    return load_error({variable: str(path)}), path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# ---------------------------------------------------------------------------------------------------------
# Files


@pytest.mark.parametrize("variable", ["IX_CONFIG", "IX_MODELS"])
def test_a_named_file_that_is_missing_is_an_error(tmp_path: Path, variable: str) -> None:
    missing = tmp_path / "nowhere.toml"
    message = load_error({variable: str(missing)})
    assert message == f"{missing}: no such file (named by {variable})"


def test_a_named_directory_is_an_error(tmp_path: Path) -> None:
    message = load_error({"IX_MODELS": str(tmp_path)})
    assert message.startswith(f"{tmp_path}: cannot read it: ")


def test_missing_default_files_are_a_warning_and_the_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(settings, "CONFIG_DIR", tmp_path / "config")
    with caplog.at_level(logging.WARNING, logger="server.settings"):
        loaded = settings.load({})
    assert loaded.auth.mode == "open" and loaded.http.port == 8000 and loaded.models == []
    warned = [r.getMessage() for r in caplog.records if r.name == "server.settings"]
    assert warned == [
        "config/server.toml not found: using the built-in defaults",
        "config/models.toml not found: using the built-in defaults",
    ]


def test_the_shipped_files_load() -> None:
    loaded = settings.load({})
    assert loaded == settings.load({"IX_CONFIG": str(ROOT / "config" / "server.toml")})
    assert loaded.http.port == 8000 and loaded.worker.embedded is True and loaded.redis_url is None


def test_toml_syntax_error_has_line_and_column(tmp_path: Path) -> None:
    message, path = config_error(tmp_path, '[http]\nport = 8000\n[auth\nmode = "open"\n')
    assert message == (
        f"{path}: TOML syntax error at line 3, column 6: expected ']' at the end of a table declaration"
    )


def test_a_file_that_is_not_utf8_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "server.toml"
    path.write_bytes(b"[http]\nhost = '\xff'\n")
    message = load_error({"IX_CONFIG": str(path)})
    assert message.startswith(f"{path}: ") and "utf-8" in message


def test_unknown_field_names_the_path_and_the_known_fields(tmp_path: Path) -> None:
    message, path = config_error(tmp_path, "[http]\nprot = 8001\n")
    assert message.startswith(f"{path}: http.prot: unknown field")
    assert "(known: host, port, web_processes," in message


def test_unknown_section(tmp_path: Path) -> None:
    message, path = config_error(tmp_path, "[htpp]\nport = 8001\n")
    assert message.startswith(f"{path}: htpp: unknown section (known: http, auth, ")


def test_unknown_field_of_a_model_route(tmp_path: Path) -> None:
    text = '[[models]]\nmatch = "gpt-*"\nbackend = "openai"\ntimeout = 3\n'
    message, path = config_error(tmp_path, text, "IX_MODELS")
    assert message.startswith(f"{path}: models[0].timeout: unknown field (known: match, backend, ")


def test_bad_enum_value(tmp_path: Path) -> None:
    message, path = config_error(tmp_path, '[auth]\nmode = "opne"\n')
    assert message == f'{path}: auth.mode: expected one of "open", "keys", got "opne"'


def test_bad_backend_fails_at_load(tmp_path: Path) -> None:
    text = '[[models]]\nmatch = "x"\nbackend = "echo"\n[[models]]\nmatch = "gpt-*"\nbackend = "opneai"\n'
    message, path = config_error(tmp_path, text, "IX_MODELS")
    assert message == (
        f"{path}: models[1].backend: expected one of "
        '"echo", "echo-slow", "gemini", "openai", "anthropic", "interactions", got "opneai"'
    )


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_backend_kind_is_accepted_and_routed(kind: str) -> None:
    """The one table of kinds (server/backend_kinds.py) is what the config accepts and the router builds."""
    route = msgspec.convert({"match": "m-*", "backend": kind}, settings.ModelRoute)
    backend, upstream_model = Router([route], settings.EchoSettings()).resolve("m-1")
    assert upstream_model == "m-1"
    assert backend.name == ("m-*" if KINDS[kind].factory is None else kind)
    assert getattr(backend, "kind", kind) == kind


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[http]\nport = "8000"\n', 'http.port: expected an integer from 1 to 65535, got "8000"'),
        ("[http]\nport = 80.5\n", "http.port: expected an integer from 1 to 65535, got 80.5"),
        ('[worker]\nembedded = "no"\n', 'worker.embedded: expected true or false, got "no"'),
        ("[runner]\nlease_seconds = true\n", "runner.lease_seconds: expected a number > 0, got true"),
        ('[http]\nhost = ""\n', 'http.host: expected a non-empty string, got ""'),
        ("http = 8000\n", "http: expected a table, got 8000"),
        ("[http]\nhost = 1979-05-27\n", "http.host: expected a non-empty string, got 1979-05-27"),
    ],
)
def test_wrong_type(tmp_path: Path, text: str, expected: str) -> None:
    message, path = config_error(tmp_path, text)
    assert message == f"{path}: {expected}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[http]\nport = 0\n", "http.port: expected an integer from 1 to 65535, got 0"),
        ("[http]\nport = 70000\n", "http.port: expected an integer from 1 to 65535, got 70000"),
        ("[http]\nweb_processes = 0\n", "http.web_processes: expected an integer >= 1, got 0"),
        ("[runner]\nlease_seconds = 0\n", "runner.lease_seconds: expected a number > 0, got 0"),
        ("[runner]\nmax_attempts = 0\n", "runner.max_attempts: expected an integer >= 1, got 0"),
        ("[worker]\npoll_delay_ms = 0\n", "worker.poll_delay_ms: expected an integer >= 1, got 0"),
        ("[store]\nttl_seconds = -1\n", "store.ttl_seconds: expected an integer >= 1, got -1"),
        ("[echo]\nslow_word_delay_ms = -5\n", "echo.slow_word_delay_ms: expected an integer >= 0, got -5"),
        (
            "[runner]\nheartbeat_seconds = 12.0\n",
            "runner.heartbeat_seconds: must be less than runner.lease_seconds (10), got 12",
        ),
    ],
)
def test_value_out_of_range(tmp_path: Path, text: str, expected: str) -> None:
    message, path = config_error(tmp_path, text)
    assert message == f"{path}: {expected}"


@pytest.mark.parametrize(
    ("route", "expected"),
    [
        ("read_timeout_seconds = 0", "models[0].read_timeout_seconds: expected a number > 0, got 0"),
        ("max_connections = 0", "models[0].max_connections: expected an integer >= 1, got 0"),
        (
            'base_url = "localhost:8000/v1"',
            'models[0].base_url: expected an http:// or https:// URL, got "localhost:8000/v1"',
        ),
        ('match = ""', 'models[0].match: expected a non-empty string, got ""'),
    ],
)
def test_model_route_values(tmp_path: Path, route: str, expected: str) -> None:
    lines = ["[[models]]", 'backend = "openai"', route]
    if not route.startswith("match"):
        lines.insert(1, 'match = "gpt-*"')
    message, path = config_error(tmp_path, "\n".join(lines) + "\n", "IX_MODELS")
    assert message == f"{path}: {expected}"


def test_missing_required_field(tmp_path: Path) -> None:
    message, path = config_error(tmp_path, '[[models]]\nbackend = "openai"\n', "IX_MODELS")
    assert message == f"{path}: models[0].match: missing (it is required)"


def test_a_key_written_in_place_of_its_variable_name_is_not_repeated(tmp_path: Path) -> None:
    text = '[[models]]\nmatch = "gpt-*"\nbackend = "openai"\napi_key_env = "sk-proj-very-secret"\n'
    message, path = config_error(tmp_path, text, "IX_MODELS")
    assert message.startswith(f"{path}: models[0].api_key_env: expected the name of an environment variable")
    assert "secret" not in message


def test_auth_keys_must_be_digests_and_tenant_names(tmp_path: Path) -> None:
    message, path = config_error(tmp_path, '[auth]\nmode = "keys"\n[auth.keys]\nmy-plain-key = "team"\n')
    assert (
        message == f"{path}: auth.keys: every key must be the sha256 hex digest of an API key (64 hex digits)"
    )
    assert "my-plain-key" not in message
    digest = "ab" * 32
    message, path = config_error(tmp_path, f'[auth.keys]\n"{digest}" = "team a"\n')
    assert message.startswith(f"{path}: auth.keys.abababab…: expected a tenant name")
    assert message.endswith('got "team a"')


def test_a_tenant_may_not_be_named_as_a_kind_of_job(tmp_path: Path) -> None:
    """A run's job id starts with its tenant's name, another kind's with its prefix: a tenant named like
    one would have its runs taken for that kind's jobs."""
    assert {prefix.removesuffix("/") for prefix in jobs.PREFIXES} == settings.RESERVED_TENANTS
    message, path = config_error(tmp_path, f'[auth.keys]\n"{"ab" * 32}" = "wh"\n')
    assert message.startswith(f"{path}: auth.keys.abababab…: expected a tenant name") and message.endswith(
        'got "wh"'
    )


# ---------------------------------------------------------------------------------------------------------
# The environment

BOOLEANS = [
    *[(text, True) for text in ("true", "TRUE", "True", "1", "yes", "YES", "Yes")],
    *[(text, False) for text in ("false", "FALSE", "False", "0", "no", "NO", "No")],
]
NOT_BOOLEANS = ["", "y", "n", "on", "off", "2", "-1", " true", "true ", "tru", "enabled", "none"]


@pytest.mark.parametrize(("text", "value"), BOOLEANS)
def test_parse_bool_accepts(text: str, value: bool) -> None:
    assert parse_bool(text) is value


@pytest.mark.parametrize("text", NOT_BOOLEANS)
def test_parse_bool_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_bool(text)


@pytest.mark.parametrize(("text", "value"), BOOLEANS)
def test_embedded_worker_variable(text: str, value: bool) -> None:
    assert settings.load({"EMBEDDED_WORKER": text}).worker.embedded is value


@pytest.mark.parametrize("text", NOT_BOOLEANS)
def test_bad_boolean_variable(text: str) -> None:
    message = load_error({"EMBEDDED_WORKER": text})
    assert (
        message == f'environment variable EMBEDDED_WORKER: expected true/false, 1/0 or yes/no, got "{text}"'
    )


@pytest.mark.parametrize(
    ("variable", "text", "expected"),
    [
        ("PORT", "abc", "an integer from 1 to 65535"),
        ("PORT", "0", "an integer from 1 to 65535"),
        ("PORT", "65536", "an integer from 1 to 65535"),
        ("PORT", "80.0", "an integer from 1 to 65535"),
        ("PORT", "+80", "an integer from 1 to 65535"),
        ("PORT", "", "an integer from 1 to 65535"),
        ("WEB_PROCESSES", "0", "an integer >= 1"),
        ("WEB_PROCESSES", "four", "an integer >= 1"),
        ("HOST", "", "a non-empty string"),
        ("IX_DATA_DIR", "", "a non-empty string"),
    ],
)
def test_bad_variable(variable: str, text: str, expected: str) -> None:
    message = load_error({variable: text})
    assert message == f'environment variable {variable}: expected {expected}, got "{text}"'


def test_variables_override_the_file(tmp_path: Path) -> None:
    path = write(
        tmp_path, "server.toml", "[http]\nport = 9000\nweb_processes = 2\n[worker]\nembedded = false\n"
    )
    environ = {
        "IX_CONFIG": str(path),
        "PORT": "8123",
        "WEB_PROCESSES": "3",
        "EMBEDDED_WORKER": "Yes",
        "HOST": "0.0.0.0",
        "IX_DATA_DIR": str(tmp_path / "data"),
        "REDIS_URL": "unix:///tmp/redis.sock",
    }
    loaded = settings.load(environ)
    assert (loaded.http.host, loaded.http.port, loaded.http.web_processes) == ("0.0.0.0", 8123, 3)
    assert loaded.worker.embedded is True and loaded.data_dir == tmp_path / "data"
    assert loaded.redis_url == "unix:///tmp/redis.sock"


def test_the_file_is_checked_before_the_variables(tmp_path: Path) -> None:
    path = write(tmp_path, "server.toml", "[http]\nport = 0\n")
    assert load_error({"IX_CONFIG": str(path), "PORT": "8000"}).startswith(f"{path}: http.port")


def test_redis_url_needs_a_redis_scheme() -> None:
    message = load_error({"REDIS_URL": "user:password@localhost:6379"})
    assert message.startswith("environment variable REDIS_URL: expected redis://")
    assert "password" not in message
    assert settings.load({"REDIS_URL": ""}).redis_url is None


def test_a_cluster_needs_a_queue_url_that_is_not_a_cluster() -> None:
    cluster = "redis+cluster://:pw@127.0.0.1:7000,127.0.0.1:7001"
    assert load_error({"REDIS_URL": cluster}).startswith("environment variable REDIS_QUEUE_URL: required")
    message = load_error({"REDIS_URL": cluster, "REDIS_QUEUE_URL": cluster})
    assert "cannot live on a Cluster" in message and "pw" not in message
    loaded = settings.load({"REDIS_URL": cluster, "REDIS_QUEUE_URL": "redis://127.0.0.1:6400/0"})
    assert (loaded.redis_url, loaded.redis_queue_url) == (cluster, "redis://127.0.0.1:6400/0")
    assert load_error({"REDIS_QUEUE_URL": "localhost:6379"}).startswith(
        "environment variable REDIS_QUEUE_URL: expected redis://"
    )


# ---------------------------------------------------------------------------------------------------------
# Routes whose key variable is unset

ROUTES = """
[[models]]
match = "gpt-*"
backend = "openai"
api_key_env = "{var}"

[[models]]
match = "local-*"
backend = "openai"
base_url = "http://127.0.0.1:11434/v1"

[[models]]
match = "test-*"
backend = "echo"
api_key_env = "{var}"
"""


def test_warnings_name_the_route_and_the_variable(tmp_path: Path) -> None:
    var = f"IX_TEST_KEY_{uuid.uuid4().hex[:8].upper()}"
    path = write(tmp_path, "models.toml", ROUTES.format(var=var))
    loaded = settings.load({"IX_MODELS": str(path)})  # an unset key does not stop the server
    assert settings.warnings(loaded, {}) == [
        f'model route "gpt-*" needs its API key in the environment variable {var}, which is not set; '
        "requests to it will fail until it is set"
    ]
    assert "which is empty" in settings.warnings(loaded, {var: ""})[0]
    assert settings.warnings(loaded, {var: "sk-1"}) == []


def test_warning_for_keys_mode_without_keys(tmp_path: Path) -> None:
    loaded = settings.load({"IX_CONFIG": str(write(tmp_path, "server.toml", '[auth]\nmode = "keys"\n'))})
    assert settings.warnings(loaded, {}) == [
        'auth.mode is "keys" but auth.keys lists no key: every request will be refused'
    ]


async def test_router_refuses_an_unkeyed_route_before_any_http(monkeypatch: pytest.MonkeyPatch) -> None:
    var = f"IX_TEST_KEY_{uuid.uuid4().hex[:8].upper()}"
    monkeypatch.delenv(var, raising=False)
    routes = [
        ModelRoute(match="gpt-*", backend="openai", base_url="http://127.0.0.1:9", api_key_env=var),
        ModelRoute(match="local-*", backend="openai", base_url="http://127.0.0.1:9"),
    ]
    router = Router(routes, EchoSettings())
    try:
        backend, upstream_model = router.resolve("gpt-4o")
        assert isinstance(backend, Unkeyed) and upstream_model == "gpt-4o"
        with pytest.raises(UpstreamError) as caught:
            backend.stream(request([user("Hello")], model="gpt-4o"))
        error = caught.value
        assert error.misconfigured and not error.retryable
        reply = upstream_error(error)
        assert (reply.status_code, reply.status) == (400, "FAILED_PRECONDITION")
        assert reply.message == (
            f'The openai backend cannot be called: model route "gpt-*" needs its API key in the '
            f"environment variable {var}, which is not set"
        )
        assert not isinstance(router.resolve("local-llama")[0], Unkeyed)  # no api_key_env: keyless
        monkeypatch.setenv(var, "sk-later")  # read per request: a key set later is used
        assert not isinstance(router.resolve("gpt-4o")[0], Unkeyed)
    finally:
        await router.aclose()


MODELS_TO_FAKE = """
[[models]]
match = "gpt-*"
backend = "openai"
base_url = "{url}/v1"
api_key_env = "{var}"

[[models]]
match = "local-*"
backend = "openai"
base_url = "{url}/v1"
"""


async def test_a_request_to_an_unkeyed_route_names_the_variable(tmp_path: Path) -> None:
    """The app in this process (tests/inproc.py), with the fake upstream on the same loop."""
    var = f"IX_TEST_UNSET_KEY_{uuid.uuid4().hex[:8].upper()}"
    assert var not in os.environ
    async with FakeServer() as fake:
        models = MODELS_TO_FAKE.format(url=fake.base_url, var=var)
        async with serving(tmp_path, models=models) as app:
            headers = {"x-goog-api-key": new_key()}
            async with httpx.AsyncClient(base_url=app.url, headers=headers, timeout=30) as client:
                await _unkeyed_requests(client, fake, var)


def test_the_start_names_an_unkeyed_route(tmp_path: Path, start_env: dict[str, str]) -> None:
    """`python -m server` says which route lacks its key, and which variable to set, as it starts (here it
    then finds its port taken and exits)."""
    var = f"IX_TEST_UNSET_KEY_{uuid.uuid4().hex[:8].upper()}"
    models = write(tmp_path, "models.toml", MODELS_TO_FAKE.format(url="http://127.0.0.1:9", var=var))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", int(start_env["PORT"])))
        taken.listen()
        status, stdout, stderr = run_server({**start_env, "IX_MODELS": str(models)})
    assert status == 1, (status, stdout, stderr)
    warnings = [line for line in stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1, stderr
    assert var in warnings[0] and '"gpt-*"' in warnings[0], warnings
    assert "local-*" not in stderr  # a route without api_key_env needs no key
    assert redis_servers_in(start_env["IX_DATA_DIR"]) == []


async def _unkeyed_requests(client: httpx.AsyncClient, fake: FakeServer, var: str) -> None:
    body: dict[str, Any] = {"model": "gpt-4o", "input": "Hello"}
    reply = await client.post("/v1beta/interactions", json=body)
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["status"] == "FAILED_PRECONDITION"
    assert f"environment variable {var}, which is not set" in error["message"]
    assert 'model route "gpt-*"' in error["message"]

    # a background run fails with the same message, not with a retry or "rejected credentials"
    reply = await client.post("/v1beta/interactions", json={**body, "background": True})
    assert reply.status_code == 200, reply.text
    interaction_id = reply.json()["id"]
    for _ in range(200):
        record = (await client.get(f"/v1beta/interactions/{interaction_id}")).json()
        if record["status"] != "in_progress":
            break
        await asyncio.sleep(0.05)
    assert record["status"] == "failed", record
    assert var in str(record)
    assert record["errors"][0]["code"] == "upstream_not_configured", record
    assert fake.requests == []  # nothing was sent upstream

    # a route without api_key_env still works without a key
    fake.add(openai_text_script("Hi there"))
    reply = await client.post("/v1beta/interactions", json={"model": "local-llama", "input": "Hello"})
    assert reply.status_code == 200, reply.text
    assert len(fake.requests) == 1 and "authorization" not in fake.requests[0].headers


# ---------------------------------------------------------------------------------------------------------
# The product as started: `python -m server` with one mistake


@pytest.fixture
def start_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a `make run` (no REDIS_URL) whose data directory is in tmp_path."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("REDIS_URL", "EMBEDDED_WORKER", "HOST", "WEB_PROCESSES")
        and not k.startswith(("IX_", "GEMINI_", "GOOGLE_"))
    }
    env.update(
        IX_CONFIG=str(write(tmp_path, "good-server.toml", "")),
        IX_MODELS=str(write(tmp_path, "good-models.toml", "")),
        IX_DATA_DIR=str(tmp_path / "var"),
        PORT=str(free_port()),
    )
    return env


def redis_servers_in(directory: str) -> list[str]:
    listed = subprocess.run(["pgrep", "-af", "redis-server"], capture_output=True, text=True, check=False)
    return [line for line in listed.stdout.splitlines() if directory in line]


def run_server(env: dict[str, str]) -> tuple[int, str, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "server"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        stdout, stderr = proc.communicate()
        pytest.fail(f"python -m server did not exit on a bad configuration:\n{stdout}\n{stderr}")
    return proc.returncode, stdout, stderr


def assert_refused(env: dict[str, str], *expected: str) -> str:
    status, stdout, stderr = run_server(env)
    lines = stderr.splitlines()
    assert status == 2, (status, stdout, stderr)
    assert "Traceback" not in stderr + stdout
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ")
    for text in expected:
        assert text in lines[0], (text, lines[0])
    assert redis_servers_in(env["IX_DATA_DIR"]) == [], "a failed start left its Redis running"
    return lines[0]


BAD_FILES = {
    "syntax": ("[http]\nport = 8000\n[auth\n", ["TOML syntax error at line 3, column 6"]),
    "unknown field": ("[http]\nprot = 8001\n", ["http.prot: unknown field"]),
    "bad enum": ('[auth]\nmode = "opne"\n', ['auth.mode: expected one of "open", "keys", got "opne"']),
    "wrong type": ('[http]\nport = "8000"\n', ["http.port: expected an integer"]),
    "out of range": ("[runner]\nmax_attempts = 0\n", ["runner.max_attempts: expected an integer >= 1"]),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_start_with_a_bad_file(tmp_path: Path, start_env: dict[str, str], case: str) -> None:
    text, expected = BAD_FILES[case]
    path = write(tmp_path, "server.toml", text)
    assert_refused({**start_env, "IX_CONFIG": str(path)}, str(path), *expected)


def test_start_with_a_bad_models_file(tmp_path: Path, start_env: dict[str, str]) -> None:
    path = write(tmp_path, "models.toml", '[[models]]\nmatch = "gpt-*"\nbackend = "opneai"\n')
    assert_refused({**start_env, "IX_MODELS": str(path)}, str(path), "models[0].backend", '"opneai"')


@pytest.mark.parametrize("variable", ["IX_CONFIG", "IX_MODELS"])
def test_start_with_a_missing_file(tmp_path: Path, start_env: dict[str, str], variable: str) -> None:
    missing = tmp_path / "missing.toml"
    assert_refused({**start_env, variable: str(missing)}, str(missing), variable, "no such file")


@pytest.mark.parametrize(
    ("variable", "value"), [("PORT", "abc"), ("WEB_PROCESSES", "0"), ("EMBEDDED_WORKER", "maybe")]
)
def test_start_with_a_bad_variable(start_env: dict[str, str], variable: str, value: str) -> None:
    assert_refused({**start_env, variable: value}, f"environment variable {variable}", f'"{value}"')


def test_start_with_a_proxy_it_cannot_use(start_env: dict[str, str]) -> None:
    line = assert_refused(
        {**start_env, "HTTPS_PROXY": "socks5://user:s3cret@proxy.test:1080"},
        "HTTPS_PROXY names a socks5:// proxy: only http:// proxies are supported",
    )
    assert "s3cret" not in line


def test_start_with_a_ca_bundle_it_cannot_read(tmp_path: Path, start_env: dict[str, str]) -> None:
    missing = tmp_path / "corporate-ca.pem"
    path = write(tmp_path, "server.toml", f'[outbound]\nca_bundle = "{missing}"\n')
    assert_refused({**start_env, "IX_CONFIG": str(path)}, "[outbound] ca_bundle: cannot load", str(missing))
