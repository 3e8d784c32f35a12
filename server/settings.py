"""Typed settings: the documented defaults in config/*.toml, then the environment on top.

Environment overrides: REDIS_URL, HOST, PORT, WEB_PROCESSES, EMBEDDED_WORKER (1/0), IX_DATA_DIR, IX_CONFIG
(another server.toml), IX_MODELS (another models.toml).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import msgspec

ROOT_DIR = Path(__file__).resolve().parent.parent
CONFIG_DIR = ROOT_DIR / "config"


class Section(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pass


class HttpSettings(Section):
    host: str = "127.0.0.1"
    port: int = 8000
    web_processes: int = 1
    max_body_bytes: int = 20 * 1024 * 1024
    strict_unknown_fields: bool = False


class AuthSettings(Section):
    #: "open": any non-empty key is accepted and is its own tenant. "keys": only the listed keys.
    mode: Literal["open", "keys"] = "open"
    #: sha256 hex digest of an API key -> tenant name (mode "keys")
    keys: dict[str, str] = {}


class StoreSettings(Section):
    ttl_seconds: int = 55 * 24 * 3600
    #: how long a finished interaction's event log is kept for stream replays; afterwards the replay is
    #: rebuilt from the stored record
    event_log_ttl_seconds: int = 3600
    max_chain_depth: int = 5000
    idempotency_ttl_seconds: int = 24 * 3600


class RunnerSettings(Section):
    lease_seconds: float = 10.0
    heartbeat_seconds: float = 1.0
    flush_interval_ms: int = 25
    #: events waiting in a process (all its runs) that make the writer flush before the interval is up
    flush_early_events: int = 512
    #: runs of a background interaction, counting the first; a lost worker's job is re-run until then
    max_attempts: int = 3
    #: a queued job not taken by a worker within this long is looked for (and queued again if lost)
    pickup_seconds: float = 30.0
    cancel_ack_timeout_seconds: float = 2.0
    #: what a foreground stream does when its client goes away: "cancel" the run, or "continue" it
    on_stream_disconnect: Literal["cancel", "continue"] = "cancel"
    keepalive_seconds: float = 15.0
    reaper_interval_seconds: float = 1.0


class WorkerSettings(Section):
    max_jobs: int = 100
    poll_delay_ms: int = 5
    shutdown_grace_seconds: float = 30.0
    #: run a worker inside each web process; EMBEDDED_WORKER=0 leaves the queue to `python -m workers`
    embedded: bool = True
    queue_name: str = "ix:queue"
    #: how often a worker says it consumes the queue; /readyz counts workers seen within 3 heartbeats
    heartbeat_seconds: float = 2.0


class EmbeddedRedisSettings(Section):
    """The private redis-server that `python -m server` starts when REDIS_URL is not set."""

    #: where its data, socket, log and the checkout's server lock live (relative: to the checkout)
    data_dir: str = "var"
    #: fsync of the append-only file: "always" (every write), "everysec" (a machine crash can lose the
    #: last second; a process crash loses nothing), or "no" (the kernel decides)
    appendfsync: Literal["always", "everysec", "no"] = "everysec"


class UpstreamRetrySettings(Section):
    attempts: int = 4
    backoff_initial_seconds: float = 0.5
    backoff_max_seconds: float = 8.0


class EchoSettings(Section):
    slow_word_delay_ms: int = 50


class ModelRoute(Section):
    #: a model name or a glob (fnmatch) such as "gemini-*"
    match: str
    #: "echo", "gemini", "openai" or "anthropic"
    backend: str
    #: the model name sent upstream; default: the requested name
    upstream_model: str | None = None
    base_url: str | None = None
    #: name of the environment variable that holds the upstream API key
    api_key_env: str | None = None
    connect_timeout_seconds: float = 5.0
    read_timeout_seconds: float = 300.0
    deadline_seconds: float = 1800.0
    max_connections: int = 200


class ServerToml(Section):
    http: HttpSettings = msgspec.field(default_factory=HttpSettings)
    auth: AuthSettings = msgspec.field(default_factory=AuthSettings)
    store: StoreSettings = msgspec.field(default_factory=StoreSettings)
    runner: RunnerSettings = msgspec.field(default_factory=RunnerSettings)
    worker: WorkerSettings = msgspec.field(default_factory=WorkerSettings)
    upstream_retry: UpstreamRetrySettings = msgspec.field(default_factory=UpstreamRetrySettings)
    echo: EchoSettings = msgspec.field(default_factory=EchoSettings)
    embedded_redis: EmbeddedRedisSettings = msgspec.field(default_factory=EmbeddedRedisSettings)


class ModelsToml(Section):
    models: list[ModelRoute] = []


class Settings(msgspec.Struct, kw_only=True):
    #: None: no REDIS_URL, so `python -m server` starts the embedded Redis (and sets REDIS_URL for its
    #: web processes)
    redis_url: str | None
    http: HttpSettings
    auth: AuthSettings
    store: StoreSettings
    runner: RunnerSettings
    worker: WorkerSettings
    upstream_retry: UpstreamRetrySettings
    echo: EchoSettings
    embedded_redis: EmbeddedRedisSettings
    models: list[ModelRoute]

    @property
    def data_dir(self) -> Path:
        return ROOT_DIR / self.embedded_redis.data_dir


def load(environ: dict[str, str] | None = None) -> Settings:
    env = dict(os.environ if environ is None else environ)
    server_path = Path(env.get("IX_CONFIG") or CONFIG_DIR / "server.toml")
    models_path = Path(env.get("IX_MODELS") or CONFIG_DIR / "models.toml")
    server = (
        msgspec.toml.decode(server_path.read_bytes(), type=ServerToml)
        if server_path.exists()
        else ServerToml()
    )
    models = (
        msgspec.toml.decode(models_path.read_bytes(), type=ModelsToml)
        if models_path.exists()
        else ModelsToml()
    )
    http, worker, embedded_redis = server.http, server.worker, server.embedded_redis
    if "HOST" in env:
        http = msgspec.structs.replace(http, host=env["HOST"])
    if "PORT" in env:
        http = msgspec.structs.replace(http, port=int(env["PORT"]))
    if "WEB_PROCESSES" in env:
        http = msgspec.structs.replace(http, web_processes=int(env["WEB_PROCESSES"]))
    if "EMBEDDED_WORKER" in env:
        worker = msgspec.structs.replace(worker, embedded=env["EMBEDDED_WORKER"] not in ("", "0", "false"))
    if "IX_DATA_DIR" in env:
        embedded_redis = msgspec.structs.replace(embedded_redis, data_dir=env["IX_DATA_DIR"])
    return Settings(
        redis_url=env.get("REDIS_URL") or None,
        http=http,
        auth=server.auth,
        store=server.store,
        runner=server.runner,
        worker=worker,
        upstream_retry=server.upstream_retry,
        echo=server.echo,
        embedded_redis=embedded_redis,
        models=models.models,
    )
