"""The product as users start it: `python -m server` with no REDIS_URL (what `make run` runs: a private Redis
on its unix socket, the worker inside the web process), the README's own tour against it with the SDK's
retries off, and what happens around a start: a second server, a busy port, a SIGKILL, a failed start,
`make worker`, the entry points' flags, the make targets.

Each test gets its own data directory (IX_DATA_DIR) and port; the configuration is the checkout's own
`config/server.toml` unless a test says otherwise.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis as sync_redis
from google.genai._interactions import NotFoundError

from server.launch.redis_process import free_port

from .replies import id_of, interaction
from .support import ROOT, Process, sdk
from .waiting import until

README = ROOT / "README.md"


class Launched:
    """`python -m server` as a user starts it, on its own data directory and port."""

    def __init__(self, data_dir: Path, **env: str) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = launch_env(data_dir, PORT=str(self.port), **env)
        self.process = Process([sys.executable, "-m", "server"], self.env, data_dir.parent / "server.log")

    @property
    def redis_socket(self) -> Path:
        return self.data_dir / "redis" / "redis.sock"

    def start(self, ready: bool = True) -> Launched:
        self.process.start()
        until(lambda: self._answers(ready), timeout=30)
        return self

    def _answers(self, ready: bool) -> bool:
        if self.process.proc is not None and self.process.proc.poll() is not None:
            raise RuntimeError("the server exited at start:\n" + self.process.log())
        try:
            path = "/readyz" if ready else "/healthz"
            return httpx.get(self.url + path, timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        self.process.stop()


def launch_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """The user's environment: no REDIS_URL, no test configuration, our data directory."""
    ours = ("REDIS_URL", "IX_CONFIG", "IX_MODELS", "EMBEDDED_WORKER", "PORT", "HOST", "WEB_PROCESSES")
    env = {k: v for k, v in os.environ.items() if k not in ours and not k.startswith(("GEMINI_", "GOOGLE_"))}
    env.update(IX_DATA_DIR=str(data_dir), PYTHONUNBUFFERED="1", **extra)
    return env


@pytest.fixture
def launched(tmp_path: Path) -> Iterator[Launched]:
    server = Launched(tmp_path / "var").start()
    try:
        yield server
    finally:
        server.stop()


def run(args: list[str], env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def redis_servers_on(data_dir: Path) -> list[str]:
    """The redis-server processes whose socket is under `data_dir`."""
    found = subprocess.run(["pgrep", "-af", "redis-server"], capture_output=True, text=True).stdout
    return [line for line in found.splitlines() if str(data_dir) in line]


def children_of(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in found.split()]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat")
    # a zombie (exited, not yet reaped by its parent) is gone for our purposes
    return not (state.exists() and state.read_text().split(")")[-1].split()[0] == "Z")


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def readme_block(language: str, containing: str) -> str:
    blocks: list[str] = re.findall(rf"```{language}\n(.*?)```", README.read_text(), flags=re.S)
    matching = [b for b in blocks if containing in b]
    assert len(matching) == 1, f"one {language} block with {containing!r} in the README"
    return matching[0]


# --- the README, as it is written -------------------------------------------------------------------------


def test_the_readme_tour_passes_against_make_run(launched: Launched) -> None:
    tour = readme_block("python", "previous_interaction_id=first.id")
    client_line = 'http_options={"base_url": "http://127.0.0.1:8000"}'
    assert tour.count(client_line) == 1
    # the same code, pointed at this server, with the SDK's retries off so a 5xx is an error
    no_retries = f'http_options={{"base_url": "{launched.url}", "retry_options": {{"attempts": 1}}}}'
    tour = tour.replace(client_line, no_retries)
    printed = StringIO()
    names: dict[str, Any] = {"__name__": "readme_tour"}  # the tour's globals, whatever it defines
    with redirect_stdout(printed):
        exec(compile(tour, "README.md tour", "exec"), names)
    lines = printed.getvalue().splitlines()
    assert lines[0] == "And again? 6"  # two turns of two words each, and this one
    assert lines[1:3] == ["interaction.created", "interaction.status_update"]
    assert lines[-3] == "interaction.completed"
    resumed_from, _, resumed_at = lines[-2].partition(" -> ")
    assert int(resumed_at.removeprefix("evt_")) == int(resumed_from.removeprefix("evt_")) + 1
    status, _, partial = lines[-1].partition(" ")
    assert status == "cancelled"
    # cancelled mid-run: some of the words, not all of them
    assert partial.startswith("a long a long") and 0 < len(partial.split()) < 400
    # what the tour did is what the server holds
    client = sdk(launched.url, "any-key")
    assert client.interactions.get(names["job"].id).status == "cancelled"
    with pytest.raises(NotFoundError):
        client.interactions.get(names["first"].id)


def test_the_readme_generate_content_block_passes_against_make_run(launched: Launched) -> None:
    block = readme_block("python", "generate_content(")
    client_line = 'http_options={"base_url": "http://127.0.0.1:8000"}'
    assert block.count(client_line) == 1
    no_retries = f'http_options={{"base_url": "{launched.url}", "retry_options": {{"attempts": 1}}}}'
    printed = StringIO()
    with redirect_stdout(printed):
        exec(compile(block.replace(client_line, no_retries), "README.md generateContent", "exec"), {})
    assert printed.getvalue().splitlines() == ["Hello there", "one two three", "4", "first second"]


def test_the_readme_curl_example_answers(launched: Launched) -> None:
    command = readme_block("sh", '"input": "Hello there"').replace("http://127.0.0.1:8000", launched.url)
    result = run(["bash", "-c", command], env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    reply = httpx.Response(200, content=result.stdout).json()
    assert reply["status"] == "completed"
    assert reply["steps"][-1]["content"][0]["text"] == "Hello there"


# --- the private Redis ------------------------------------------------------------------------------------


def test_the_embedded_redis_listens_only_on_its_socket_with_the_configured_fsync(launched: Launched) -> None:
    with sync_redis.Redis(unix_socket_path=str(launched.redis_socket)) as redis:
        assert redis.config_get("appendonly")["appendonly"] == "yes"
        assert redis.config_get("appendfsync")["appendfsync"] == "everysec"  # config/server.toml's default
        assert redis.config_get("port")["port"] == "0"


def test_the_fsync_policy_comes_from_the_config(tmp_path: Path) -> None:
    config = tmp_path / "server.toml"
    config.write_text('[embedded_redis]\nappendfsync = "always"\n')
    server = Launched(tmp_path / "var", IX_CONFIG=str(config)).start()
    try:
        with sync_redis.Redis(unix_socket_path=str(server.redis_socket)) as redis:
            assert redis.config_get("appendfsync")["appendfsync"] == "always"
    finally:
        server.stop()


def test_a_second_server_on_the_same_data_refuses_and_the_first_keeps_serving(launched: Launched) -> None:
    client = sdk(launched.url, "any-key")
    made = id_of(interaction(client.interactions.create(model="echo", input="still here")))
    second = run([sys.executable, "-m", "server"], launch_env(launched.data_dir, PORT=str(free_port())))
    assert second.returncode != 0
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1, second.stderr
    assert (
        "already running" in lines[0] and str(launched.process.pid) in lines[0] and launched.url in lines[0]
    )
    assert "Traceback" not in second.stdout + second.stderr
    # the first one's Redis, socket and data are untouched
    assert launched.redis_socket.exists()
    assert len(redis_servers_on(launched.data_dir)) == 1
    for _ in range(20):
        assert client.interactions.get(made).output_text == "still here"


def test_a_port_in_use_is_one_line_and_nothing_is_left_running(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        data_dir = tmp_path / "var"
        result = run([sys.executable, "-m", "server"], launch_env(data_dir, PORT=str(port)))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"127.0.0.1:{port}" in lines[0] and "PORT" in lines[0], result.stderr
    assert redis_servers_on(data_dir) == []
    # the lock went with it: the next start on this data works
    Launched(data_dir).start().stop()


def test_sigkill_of_the_server_leaves_nothing_behind_and_loses_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "var"
    server = Launched(data_dir).start()
    client = sdk(server.url, "any-key")  # held: a dropped genai.Client closes its connections
    made = id_of(interaction(client.interactions.create(model="echo", input="survive the kill")))
    children = children_of(server.process.pid)
    assert len(children) >= 2  # the redis-server and the web process
    assert server.process.proc is not None
    server.process.proc.send_signal(signal.SIGKILL)  # the server alone, not its process group
    server.process.wait(timeout=5)
    until(lambda: not any(alive(pid) for pid in children), timeout=10)
    assert redis_servers_on(data_dir) == []
    with pytest.raises(httpx.HTTPError):
        httpx.get(server.url + "/healthz", timeout=1)
    # the next start is on the same data, with nothing lost
    again = Launched(data_dir).start()
    try:
        after = sdk(again.url, "any-key")
        assert after.interactions.get(made).output_text == "survive the kill"
    finally:
        again.stop()


def test_an_unreachable_redis_is_one_line_and_nothing_is_left_running(tmp_path: Path) -> None:
    port = free_port()
    result = run(
        [sys.executable, "-m", "server"],
        launch_env(tmp_path / "var", REDIS_URL=f"redis://127.0.0.1:{port}/0", PORT=str(free_port())),
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"127.0.0.1:{port}" in lines[0] and "does not answer" in lines[0], (
        result.stderr
    )


def test_a_redis_that_cannot_start_is_one_line(tmp_path: Path) -> None:
    data_dir = tmp_path / "var"
    (data_dir / "redis").mkdir(parents=True)
    # a manifest that points at files that are not there: redis-server refuses to start
    (data_dir / "redis" / "appendonlydir").mkdir()
    (data_dir / "redis" / "appendonlydir" / "appendonly.aof.manifest").write_text("garbage\n")
    result = run([sys.executable, "-m", "server"], launch_env(data_dir, PORT=str(free_port())))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "redis-server exited at start" in lines[0] and "redis.log" in lines[0]
    assert redis_servers_on(data_dir) == []


# --- workers ------------------------------------------------------------------------------------------------


def test_without_a_worker_readyz_says_why_and_make_worker_finds_make_runs_redis(tmp_path: Path) -> None:
    data_dir = tmp_path / "var"
    server = Launched(data_dir, EMBEDDED_WORKER="0").start(ready=False)
    worker = Process([sys.executable, "-m", "workers"], launch_env(data_dir), tmp_path / "worker.log")
    try:
        response = httpx.get(server.url + "/readyz")
        assert response.status_code == 503
        assert "no worker consumes the queue" in response.json()["reason"]
        client = sdk(server.url, "any-key")
        job = id_of(
            interaction(client.interactions.create(model="echo", input="wait for a worker", background=True))
        )
        time.sleep(0.5)
        assert client.interactions.get(job).status == "in_progress"  # waiting, as Google shows it
        # `make worker` with no REDIS_URL: the Redis of the server running on this checkout's data
        worker.start()
        until(lambda: client.interactions.get(job).status == "completed", timeout=20)
        assert "unix://" in worker.log() and str(data_dir) in worker.log()
        until(lambda: httpx.get(server.url + "/readyz").status_code == 200, timeout=10)
        # a worker that stops is missed within three heartbeats
        worker.stop()
        until(lambda: httpx.get(server.url + "/readyz").status_code == 503, timeout=10)
    finally:
        worker.stop()
        server.stop()


def test_a_worker_with_no_redis_to_find_refuses(tmp_path: Path) -> None:
    result = run([sys.executable, "-m", "workers"], launch_env(tmp_path / "var"))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "REDIS_URL is not set" in lines[0] and str(tmp_path) in lines[0], result.stderr


# --- the entry points and the make targets ------------------------------------------------------------------


@pytest.mark.parametrize("module", ["server", "workers"])
def test_help_and_version_print_and_start_nothing(module: str, tmp_path: Path) -> None:
    env = launch_env(tmp_path / "var")
    shown = run([sys.executable, "-m", module, "--help"], env)
    assert shown.returncode == 0 and "usage:" in shown.stdout and "REDIS_URL" in shown.stdout
    version = run([sys.executable, "-m", module, "--version"], env)
    assert version.returncode == 0 and re.search(r"\d+\.\d+\.\d+", version.stdout)
    assert not (tmp_path / "var").exists()


@pytest.mark.parametrize("script", ["interaction-server", "interaction-worker"])
def test_the_console_scripts_are_installed(script: str, tmp_path: Path) -> None:
    installed = Path(sys.executable).parent / script
    result = run([str(installed), "--version"], launch_env(tmp_path / "var"))
    assert result.returncode == 0 and "0." in result.stdout


def test_make_run_installs_the_runtime_dependencies_only() -> None:
    recipe = run(["make", "-n", "-B", ".venv/.installed-run"], dict(os.environ)).stdout
    assert "pip install --quiet -e .\n" in recipe and "[test]" not in recipe
    assert ".installed-run" in run(["make", "-n", "-B", "run"], dict(os.environ)).stdout


def test_the_banner_comes_once_the_server_answers(tmp_path: Path) -> None:
    server = Launched(tmp_path / "var")
    server.process.start()
    try:
        until(lambda: "Interaction server on" in server.process.log(), timeout=30)
        assert httpx.get(server.url + "/healthz", timeout=1).status_code == 200
    finally:
        server.stop()


def test_delete_data_is_refused_while_a_server_runs_and_deletes_after(tmp_path: Path) -> None:
    data_dir = tmp_path / "var"
    server = Launched(data_dir).start()
    client = sdk(server.url, "any-key")
    client.interactions.create(model="echo", input="to be deleted")
    refused = run([sys.executable, "-m", "server", "--delete-data"], launch_env(data_dir))
    assert refused.returncode == 1 and "already running" in refused.stderr
    assert (data_dir / "redis").exists()
    server.stop()
    deleted = run([sys.executable, "-m", "server", "--delete-data"], launch_env(data_dir))
    assert deleted.returncode == 0 and "deleted" in deleted.stdout
    assert not (data_dir / "redis").exists()


def test_make_clean_keeps_the_data_and_delete_data_is_its_own_target() -> None:
    clean = run(["make", "-n", "clean"], dict(os.environ))
    assert clean.returncode == 0 and "rm -rf" in clean.stdout and "var" not in clean.stdout
    delete = run(["make", "-n", "delete-data"], dict(os.environ))
    assert "--delete-data" in delete.stdout


# --- your own Redis, over TLS ------------------------------------------------------------------------------


@pytest.fixture
def tls_redis(tmp_path: Path) -> Iterator[str]:
    """A redis-server that speaks only TLS, with a self-signed certificate; yields its rediss:// URL."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-keyout", str(key),
         "-out", str(cert), "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    port = free_port()
    redis = subprocess.Popen(
        ["redis-server", "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1",
         "--tls-cert-file", str(cert), "--tls-key-file", str(key), "--tls-ca-cert-file", str(cert),
         "--tls-auth-clients", "no", "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        until(lambda: listening(port), timeout=10)
        yield f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={cert}"
    finally:
        redis.terminate()
        redis.wait(timeout=10)


def test_your_own_redis_over_tls_with_the_worker_in_the_web_process(tmp_path: Path, tls_redis: str) -> None:
    server = Launched(tmp_path / "var", REDIS_URL=tls_redis).start()
    try:
        client = sdk(server.url, "any-key")
        assert (
            interaction(client.interactions.create(model="echo", input="over TLS")).output_text == "over TLS"
        )
        job = id_of(
            interaction(client.interactions.create(model="echo-slow", input="slowly " * 100, background=True))
        )
        with client.interactions.get(job, stream=True) as stream:
            seen = [next(stream) for _ in range(6)]
        assert [e.event_type for e in seen[:2]] == ["interaction.created", "interaction.status_update"]
        cancelled = client.interactions.cancel(job)
        assert cancelled.status == "cancelled" and (cancelled.output_text or "").startswith("slowly")
        # no Redis of its own: nothing under the data directory
        assert not (tmp_path / "var" / "redis").exists()
    finally:
        server.stop()
