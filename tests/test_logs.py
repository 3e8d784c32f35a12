"""Logs as the processes write them (`python -m server` with granian's web processes, `python -m workers`):
one format for all, JSON with LOG_FORMAT=json, LOG_LEVEL honoured, an access line per request unless
turned off, and no API key, upstream key or request body in any line at any level.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from server import settings
from server.config_errors import ConfigError
from server.observability import context, logs

from .fakes.http import FakeServer, Script
from .fakes.loop import fake_in_thread
from .fakes.openai import openai_text_script
from .log_lines import json_lines
from .support import ROOT, TOPOLOGIES, Process, Stack, new_key, running_stack
from .waiting import until

CREATE = "/v1beta/interactions"
ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
TEXT_LINE = re.compile(
    rf"{ISO_UTC.pattern} (DEBUG|INFO|WARNING|ERROR|CRITICAL) +\S+ \[(launcher|web|worker) \d+\] "
)
UPSTREAM_KEY_ENV = "IX_TEST_LOGS_UPSTREAM_KEY"


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeServer]:
    with fake_in_thread(FakeServer()) as fake:
        yield fake


def processes_of(stack: Stack) -> list[Process]:
    """Its web and worker processes (kept: a stopped stack forgets its workers)."""
    return [process for process, _url in stack.servers] + list(stack.workers)


def logs_of(processes: list[Process]) -> str:
    return "".join(process.log() for process in processes)


# ---------------------------------------------------------------------------------------------------------
# JSON at DEBUG, every process, and what must never be written


class Secrets:
    def __init__(self) -> None:
        tag = uuid.uuid4().hex
        self.header_key = f"hdrkey{tag}"
        self.query_key = f"qrykey{tag}"
        self.bearer_key = f"brrkey{tag}"
        self.upstream_key = f"upkey{tag}"
        self.text = f"confidential words {tag} never logged"

    def all(self) -> list[str]:
        return [
            self.header_key,
            self.query_key,
            self.bearer_key,
            self.upstream_key,
            self.text,
            self.text[13:],
        ]


def secret_requests(url: str, secrets: Secrets, upstream: FakeServer) -> list[str]:
    """Requests that carry the secrets, failing ones among them; the request ids of the answers."""
    body = {"model": "echo", "input": secrets.text}
    text = secrets.text
    upstream.add(openai_text_script("Fine"), Script(status=401, body=b'{"error": {"message": "bad key"}}'))
    with httpx.Client(base_url=url, headers={"x-goog-api-key": secrets.header_key}, timeout=30) as http:
        replies = [
            http.post(CREATE, json=body),
            http.post(CREATE, json={**body, "stream": True}),
            http.post(CREATE, json={"model": "fake-model", "input": text}),
            http.post(CREATE, json={"model": "fake-model", "input": text}),  # the upstream's 401
            http.post(CREATE, content=b'{"model": "echo", "input": "' + text.encode()),  # bad JSON
            http.post(CREATE, json={"model": "no-such-model", "input": text}),
            http.post(CREATE, json=body, headers={"X-Request-Id": "not valid!"}),
        ]
        background = http.post(CREATE, json={**body, "background": True})
        until(lambda: http.get(f"{CREATE}/{background.json()['id']}").json()["status"] == "completed")
    anonymous = httpx.Client(base_url=url, timeout=30)
    with anonymous:
        replies += [
            anonymous.post(CREATE, json=body),  # 401: no key
            anonymous.post(CREATE, params={"key": secrets.query_key}, json=body),
            anonymous.post(CREATE, headers={"Authorization": f"Bearer {secrets.bearer_key}"}, json=body),
        ]
    statuses = [reply.status_code for reply in replies]
    assert statuses == [200, 200, 200, 400, 400, 400, 200, 401, 200, 200], statuses
    return [reply.headers["x-request-id"] for reply in [*replies, background]]


def test_json_logs_parse_and_hold_no_secret(tmp_path: Path, upstream: FakeServer) -> None:
    secrets = Secrets()
    models = (
        f'[[models]]\nmatch = "fake-*"\nbackend = "openai"\nbase_url = "{upstream.base_url}/v1"\n'
        f'api_key_env = "{UPSTREAM_KEY_ENV}"\n'
    )
    env = {"LOG_LEVEL": "DEBUG", "LOG_FORMAT": "json", UPSTREAM_KEY_ENV: secrets.upstream_key}
    with running_stack(tmp_path, models=models, workers=1, env=env) as stack:
        processes = processes_of(stack)
        request_ids = secret_requests(stack.url, secrets, upstream)
        assert upstream.requests[-1].headers["authorization"] == f"Bearer {secrets.upstream_key}"
        until(lambda: all(rid in logs_of(processes) for rid in request_ids))
    # with the lines of the processes' ends
    text = logs_of(processes)
    lines = json_lines(text)
    for secret in secrets.all():
        assert secret not in text, f"{secret!r} is in the logs"
    for line in lines:
        assert {"time", "level", "logger", "message", "process", "pid"} <= set(line), line
        assert ISO_UTC.fullmatch(line["time"]), line
    access = [line for line in lines if line["logger"] == "server.access"]
    assert {line["request_id"] for line in access} >= set(request_ids)
    assert {line["process"] for line in lines} == {"launcher", "web", "worker"}
    # DEBUG reached the launcher and the web process (a replaced request id is a web process's debug line)
    assert {line["process"] for line in lines if line["level"] == "DEBUG"} >= {"launcher", "web"}
    assert any("X-Request-Id 'not valid!'" in line["message"] and "request_id" in line for line in lines)
    assert_granian_lines(lines)


def assert_granian_lines(lines: list[dict[str, Any]]) -> None:
    """granian's own lines, from its Python (the launcher) and its Rust (each web process), in our format."""
    starting = [line for line in lines if line["message"].startswith("Starting granian")]
    assert [(line["logger"], line["process"]) for line in starting] == [("_granian", "launcher")]
    started = [line for line in lines if line["message"] == "Started worker-1"]
    assert [line["process"] for line in started] == ["web"], started


# ---------------------------------------------------------------------------------------------------------
# The text format, and the access log turned off


def test_text_lines_and_no_access_log(tmp_path: Path) -> None:
    with running_stack(tmp_path, env={"ACCESS_LOG": "0"}, workers=1) as stack:
        web_process, worker_process = processes_of(stack)
        with httpx.Client(base_url=stack.url, headers={"x-goog-api-key": new_key()}) as http:
            for _ in range(3):
                assert http.post(CREATE, json={"model": "echo", "input": "hi"}).status_code == 200
            assert http.get("/nowhere").status_code == 404
    web, worker = web_process.log(), worker_process.log()
    assert "server.access" not in web
    stamped = [line for line in (web + worker).splitlines() if ISO_UTC.match(line)]
    assert stamped and all(TEXT_LINE.match(line) for line in stamped), stamped
    assert any(TEXT_LINE.match(line) and "_granian [launcher" in line for line in web.splitlines())
    assert any("Started worker-1" in line and " [web " in line for line in stamped)
    assert any("worker ready" in line and " [worker " in line for line in stamped)


def test_the_access_log_is_on_by_default_in_text(tmp_path: Path) -> None:
    with running_stack(tmp_path, topology=TOPOLOGIES["tcp-embedded"]) as stack:
        reply = httpx.get(f"{stack.url}/nowhere?key=abc&x=1", headers={"X-Request-Id": "text-line"})
        assert reply.status_code == 404
        web = stack.servers[0][0]
        line = until(lambda: next((x for x in web.log().splitlines() if "request_id=text-line" in x), None))
    assert TEXT_LINE.match(line) and " server.access [web " in line, line
    assert "GET /nowhere?key&x 404 " in line and f" {len(reply.content)}B " in line, line
    assert "abc" not in line


# ---------------------------------------------------------------------------------------------------------
# The settings: variables, the [log] section, start-up refusals


def test_the_log_settings_and_their_variables(tmp_path: Path) -> None:
    config = tmp_path / "server.toml"
    config.write_text('[log]\nformat = "json"\nlevel = "warning"\naccess = false\n')
    loaded = settings.load({"IX_CONFIG": str(config)}).log
    assert (loaded.format, loaded.level, loaded.access) == ("json", "warning", False)
    env = {"IX_CONFIG": str(config), "LOG_FORMAT": "TEXT", "LOG_LEVEL": "Debug", "ACCESS_LOG": "1"}
    loaded = settings.load(env).log
    assert (loaded.format, loaded.level, loaded.access) == ("text", "debug", True)
    assert settings.load({"ACCESS_LOG": "0"}).log.access is False
    assert settings.load({}).log == settings.LogSettings(format="text", level="info", access=True)


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("LOG_FORMAT", "xml", 'environment variable LOG_FORMAT: expected one of "text", "json", got "xml"'),
        ("LOG_LEVEL", "loud", 'environment variable LOG_LEVEL: expected one of "info", "debug", "warning"'),
        ("ACCESS_LOG", "sometimes", "environment variable ACCESS_LOG: expected true/false, 1/0 or yes/no"),
    ],
)
def test_a_bad_log_variable_is_refused_by_name(variable: str, value: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(expected)):
        settings.load({variable: value})


@pytest.mark.parametrize("command", ["server", "workers"])
def test_the_processes_refuse_a_bad_log_format_at_start(command: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IX_", "LOG_", "REDIS_URL"))}
    env.update(LOG_FORMAT="yaml", IX_DATA_DIR=str(tmp_path / "var"), REDIS_URL="redis://127.0.0.1:1/0")
    done = subprocess.run(
        [sys.executable, "-m", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done
    assert done.stderr.splitlines() == [
        'error: environment variable LOG_FORMAT: expected one of "text", "json", got "yaml"'
    ]


# ---------------------------------------------------------------------------------------------------------
# The formatters


def record(message: str, exc: BaseException | None = None) -> logging.LogRecord:
    exc_info = (type(exc), exc, exc.__traceback__) if exc is not None else None
    return logging.LogRecord("server.test", logging.ERROR, __file__, 1, message, None, exc_info)


def test_a_json_line_has_the_request_and_the_exception_as_text() -> None:
    formatter = logs.JsonFormatter("web")
    request = context.RequestContext("rid-1")
    request.tenant, request.interaction_id = "tenant-1", "v1_abc"
    token = context.enter(request)
    try:
        raise ValueError("boom")
    except ValueError as exc:
        line = formatter.format(record("it failed", exc))
    finally:
        context.leave(token)
    parsed = json_lines(line)[0]
    assert parsed["message"] == "it failed" and parsed["level"] == "ERROR" and parsed["process"] == "web"
    assert (parsed["request_id"], parsed["tenant"], parsed["interaction_id"]) == (
        "rid-1",
        "tenant-1",
        "v1_abc",
    )
    assert parsed["exc_info"].startswith("Traceback") and "ValueError: boom" in parsed["exc_info"]
    assert "request_id" not in json_lines(formatter.format(record("outside a request")))[0]


def test_the_launcher_is_told_from_its_web_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    """granian applies the web processes' configuration in the launcher too: there it is the launcher."""
    # what the factory sets for the process, restored afterwards
    for name in ("_srcfile", "logThreads", "logMultiprocessing"):
        monkeypatch.setattr(logging, name, getattr(logging, name))
    monkeypatch.setattr(logs, "_active", None)
    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)
    assert logs.formatter("web", "text", parent_pid=os.getpid()).kind == "launcher"
    assert logs.formatter("web", "text", parent_pid=os.getpid() + 1).kind == "web"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:s3cret@host:6379/0", "redis://:***@host:6379/0"),
        ("rediss://user:s3cret@host/0", "rediss://user:***@host/0"),
        ("redis://host:6379/0?password=s3cret&db=1", "redis://host:6379/0?password=***&db=1"),
        ("unix:///var/run/redis.sock", "unix:///var/run/redis.sock"),
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
    ],
)
def test_redis_passwords_are_not_shown(url: str, shown: str) -> None:
    assert logs.redact_url(url) == shown
