"""Typed settings: the documented defaults in config/*.toml, then the environment on top.

Environment overrides: REDIS_URL, HOST, PORT, WEB_PROCESSES, EMBEDDED_WORKER (true/false, 1/0, yes/no),
IX_DATA_DIR, IX_CONFIG (another server.toml), IX_MODELS (another models.toml). REDIS_URL, IX_CONFIG and
IX_MODELS count as unset when empty; any other of them set to an empty value is an error.

Every mistake in them is a `ConfigError` whose text is one line naming the file (or the variable), the
field and the problem, so the entry points can print it as it is and exit.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal, TypeVar

import msgspec
from msgspec import inspect as mi

from .config_errors import (
    ConfigError,
    declare_literals,
    describe,
    field_type,
    syntax_problem,
    unwrap,
    validation_problem,
)

ROOT_DIR = Path(__file__).resolve().parent.parent
CONFIG_DIR = ROOT_DIR / "config"

log = logging.getLogger(__name__)

T = TypeVar("T")

# The ranges below are the ones outside of which a value cannot work (a timeout of 0, no web process), so
# that a typo fails at start instead of at the first request that needs the value.
Port = Annotated[int, msgspec.Meta(ge=1, le=65535)]
PositiveInt = Annotated[int, msgspec.Meta(ge=1)]
NonNegativeInt = Annotated[int, msgspec.Meta(ge=0)]
PositiveFloat = Annotated[float, msgspec.Meta(gt=0)]
NonNegativeFloat = Annotated[float, msgspec.Meta(ge=0)]
NonEmptyStr = Annotated[str, msgspec.Meta(min_length=1)]
EnvName = Annotated[
    str,
    msgspec.Meta(
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="the name of an environment variable (letters, digits and _)",
    ),
]
HttpUrl = Annotated[str, msgspec.Meta(pattern=r"^https?://[^/]", description="an http:// or https:// URL")]
BackendKind = Literal["echo", "echo-slow", "gemini", "openai", "anthropic"]
AuthMode = Literal["open", "keys"]
StreamDisconnect = Literal["cancel", "continue"]
AppendFsync = Literal["always", "everysec", "no"]
declare_literals(BackendKind, AuthMode, StreamDisconnect, AppendFsync)


class Section(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pass


class HttpSettings(Section):
    host: NonEmptyStr = "127.0.0.1"
    port: Port = 8000
    web_processes: PositiveInt = 1
    max_body_bytes: PositiveInt = 20 * 1024 * 1024
    strict_unknown_fields: bool = False
    #: how long a client has to send a request's headers, counted from the connection's start or the end
    #: of its previous request: a slower client, or a kept-alive connection idle for longer, is closed
    #: (granian's HTTP/1 header read timeout, at most 60 s)
    header_read_timeout_seconds: Annotated[float, msgspec.Meta(gt=0, le=60)] = 10.0
    #: how long a request body may take to arrive whole; a slower one is answered 408 and its connection
    #: closed (granian has no body timeout: the create handler bounds its read)
    body_read_timeout_seconds: PositiveFloat = 60.0
    #: connections one web process holds at once, each of them counted from its accept to its close
    #: (granian's backpressure); more wait in the listen backlog
    max_connections: PositiveInt = 4096


class AuthSettings(Section):
    #: "open": any non-empty key is accepted and is its own tenant. "keys": only the listed keys.
    mode: AuthMode = "open"
    #: sha256 hex digest of an API key -> tenant name (mode "keys")
    keys: dict[str, str] = {}


class StoreSettings(Section):
    ttl_seconds: PositiveInt = 55 * 24 * 3600
    #: how long a finished interaction's event log is kept for stream replays; afterwards the replay is
    #: rebuilt from the stored record
    event_log_ttl_seconds: PositiveInt = 3600
    max_chain_depth: PositiveInt = 5000
    idempotency_ttl_seconds: PositiveInt = 24 * 3600
    #: the longest any Redis command may take (blocking reads: their block time plus this); past it the
    #: request answers 503 UNAVAILABLE instead of waiting on a Redis that hangs
    redis_timeout_seconds: PositiveFloat = 2.0


class RunnerSettings(Section):
    lease_seconds: PositiveFloat = 10.0
    heartbeat_seconds: PositiveFloat = 1.0
    flush_interval_ms: PositiveInt = 25
    #: events waiting in a process (all its runs) that make the writer flush before the interval is up
    flush_early_events: PositiveInt = 512
    #: runs of a background interaction, counting the first; a lost worker's job is re-run until then
    max_attempts: PositiveInt = 3
    #: a queued job not taken by a worker within this long is looked for (and queued again if lost)
    pickup_seconds: PositiveFloat = 30.0
    cancel_ack_timeout_seconds: NonNegativeFloat = 2.0
    #: what a foreground stream does when its client goes away: "cancel" the run, or "continue" it
    on_stream_disconnect: StreamDisconnect = "cancel"
    keepalive_seconds: PositiveFloat = 15.0
    reaper_interval_seconds: PositiveFloat = 1.0

    @property
    def pickup_ms(self) -> int:
        """How long a queued job may wait before the reaper looks for it (and then again, while it waits)."""
        return int(self.pickup_seconds * 1000)


class WorkerSettings(Section):
    max_jobs: PositiveInt = 100
    #: 0 would make arq poll Redis in a busy loop
    poll_delay_ms: PositiveInt = 5
    shutdown_grace_seconds: NonNegativeFloat = 30.0
    #: run a worker inside each web process; EMBEDDED_WORKER=0 leaves the queue to `python -m workers`
    embedded: bool = True
    queue_name: NonEmptyStr = "ix:queue"
    #: how often a worker says it consumes the queue; /readyz counts workers seen within 3 heartbeats
    heartbeat_seconds: PositiveFloat = 2.0


class EmbeddedRedisSettings(Section):
    """The private redis-server that `python -m server` starts when REDIS_URL is not set."""

    #: where its data, socket, log and the checkout's server lock live (relative: to the checkout)
    data_dir: NonEmptyStr = "var"
    #: fsync of the append-only file: "always" (every write), "everysec" (a machine crash can lose the
    #: last second; a process crash loses nothing), or "no" (the kernel decides)
    appendfsync: AppendFsync = "everysec"


class UpstreamRetrySettings(Section):
    attempts: PositiveInt = 4
    backoff_initial_seconds: NonNegativeFloat = 0.5
    backoff_max_seconds: NonNegativeFloat = 8.0


class EchoSettings(Section):
    slow_word_delay_ms: NonNegativeInt = 50
    #: the most words one answer of the echo models has; a longer one stops there with status
    #: "incomplete", as a model stops at its output limit (65,536: Gemini 2.5's output limit in tokens)
    max_output_words: PositiveInt = 65536


class ModelRoute(Section):
    #: a model name or a glob (fnmatch) such as "gemini-*"
    match: NonEmptyStr
    #: the backend kinds of server/upstream/routing.py
    backend: BackendKind
    #: the model name sent upstream; default: the requested name
    upstream_model: str | None = None
    base_url: HttpUrl | None = None
    #: name of the environment variable that holds the upstream API key
    api_key_env: EnvName | None = None
    connect_timeout_seconds: PositiveFloat = 5.0
    read_timeout_seconds: PositiveFloat = 300.0
    deadline_seconds: PositiveFloat = 1800.0
    max_connections: PositiveInt = 200

    def missing_key(self, environ: Mapping[str, str] | None = None) -> str | None:
        """Why this route cannot be called (its key variable is unset or empty), or None when it can.

        Read at call time, like the key itself, so a key set later is picked up. The echo backends and
        routes without `api_key_env` (a local vLLM or Ollama) need no key.
        """
        if not self.api_key_env or self.backend in ("echo", "echo-slow"):
            return None
        value = (os.environ if environ is None else environ).get(self.api_key_env)
        if value:
            return None
        state = "is empty" if value == "" else "is not set"
        return (
            f'model route "{self.match}" needs its API key in the environment variable '
            f"{self.api_key_env}, which {state}"
        )


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


def load(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings of this process. Raises `ConfigError` (one line) for any mistake in them."""
    env = dict(os.environ if environ is None else environ)
    server = _load_file(ServerToml, env, "IX_CONFIG", "server.toml")
    models = _load_file(ModelsToml, env, "IX_MODELS", "models.toml")
    server = _apply_environment(server, env)
    return Settings(
        redis_url=_redis_url(env),
        http=server.http,
        auth=server.auth,
        store=server.store,
        runner=server.runner,
        worker=server.worker,
        upstream_retry=server.upstream_retry,
        echo=server.echo,
        embedded_redis=server.embedded_redis,
        models=models.models,
    )


def warnings(settings: Settings, environ: Mapping[str, str] | None = None) -> list[str]:
    """What is valid but will not work as the operator probably expects: one line each, for the start.

    A route whose key variable is unset does not stop the server (its other models work, and a key may be
    a deliberate omission on a machine that only serves echo), but every request to it will fail.
    """
    env = os.environ if environ is None else environ
    found = [
        f"{message}; requests to it will fail until it is set"
        for route in settings.models
        if (message := route.missing_key(env)) is not None
    ]
    if settings.auth.mode == "keys" and not settings.auth.keys:
        found.append('auth.mode is "keys" but auth.keys lists no key: every request will be refused')
    return found


# -- booleans and integers from the environment ----------------------------------------------------------

_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
_INTEGER = re.compile(r"-?[0-9]+")


def parse_bool(text: str) -> bool:
    """true/false, 1/0, yes/no in any case; anything else is a ValueError (never a silent False)."""
    try:
        return _BOOLEANS[text.lower()]
    except KeyError:
        raise ValueError(f"not a boolean: {text!r}") from None


def parse_int(text: str) -> int:
    """Decimal digits with an optional minus: `int()` would also take " 8_000", "+8000" and "٨٠٠٠"."""
    if not _INTEGER.fullmatch(text):
        raise ValueError(f"not an integer: {text!r}")
    return int(text)


#: environment variable -> the (section, field) of server.toml it overrides
ENV_OVERRIDES: dict[str, tuple[str, str]] = {
    "HOST": ("http", "host"),
    "PORT": ("http", "port"),
    "WEB_PROCESSES": ("http", "web_processes"),
    "EMBEDDED_WORKER": ("worker", "embedded"),
    "IX_DATA_DIR": ("embedded_redis", "data_dir"),
}

_REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def _apply_environment(server: ServerToml, env: Mapping[str, str]) -> ServerToml:
    for variable, (section_name, field) in ENV_OVERRIDES.items():
        text = env.get(variable)
        if text is None:
            continue
        section: Section = getattr(server, section_name)
        found = field_type(mi.type_info(type(section)), field)
        info = unwrap(found) if found is not None else None
        if isinstance(info, mi.BoolType):
            expected = "true/false, 1/0 or yes/no"
        else:
            expected = describe(info) if info is not None else "another value"
        problem = f"environment variable {variable}: expected {expected}, got {json.dumps(text)}"
        try:
            value = _parse_env(text, info)
            # converting the whole section checks the value against the same ranges as the file's
            section = msgspec.convert(msgspec.structs.asdict(section) | {field: value}, type(section))
        except (ValueError, msgspec.ValidationError):
            raise ConfigError(problem) from None
        server = msgspec.structs.replace(server, **{section_name: section})
    return server


def _parse_env(text: str, info: mi.Type | None) -> object:
    if isinstance(info, mi.BoolType):
        return parse_bool(text)
    if isinstance(info, mi.IntType):
        return parse_int(text)
    return text


def _redis_url(env: Mapping[str, str]) -> str | None:
    url = env.get("REDIS_URL") or None
    if url is not None and not url.startswith(_REDIS_SCHEMES):
        # the value is not repeated: a Redis URL often carries a password
        raise ConfigError(
            "environment variable REDIS_URL: expected a URL starting with redis://, rediss:// or unix://"
        )
    return url


# -- the files -------------------------------------------------------------------------------------------


def _load_file(tp: type[T], env: Mapping[str, str], variable: str, default_name: str) -> T:
    named = env.get(variable) or None
    path = Path(named) if named else CONFIG_DIR / default_name
    shown = named or f"{CONFIG_DIR.name}/{default_name}"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if named:
            # an explicitly named file that is not there must not fall back to open defaults
            raise ConfigError(f"{shown}: no such file (named by {variable})") from None
        log.warning("%s not found: using the built-in defaults", shown)
        return tp()
    except OSError as exc:
        raise ConfigError(f"{shown}: cannot read it: {exc.strerror or exc}") from None
    try:
        raw = msgspec.toml.decode(data)
    except msgspec.DecodeError as exc:
        raise ConfigError(f"{shown}: {syntax_problem(str(exc))}") from None
    try:
        loaded = msgspec.convert(raw, tp)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{shown}: {validation_problem(str(exc), raw, tp)}") from None
    problem = _cross_check(loaded)
    if problem is not None:
        raise ConfigError(f"{shown}: {problem}")
    return loaded


_TENANT_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_SHA256_HEX = re.compile(r"[0-9a-fA-F]{64}")


def _cross_check(loaded: object) -> str | None:
    """What one field's type cannot say: the relations between fields, and the auth.keys entries."""
    if not isinstance(loaded, ServerToml):
        return None
    runner = loaded.runner
    if runner.heartbeat_seconds >= runner.lease_seconds:
        # the heartbeat renews the lease: a slower one would lose every lease and re-run every run
        return (
            f"runner.heartbeat_seconds: must be less than runner.lease_seconds ({runner.lease_seconds:g}), "
            f"got {runner.heartbeat_seconds:g}"
        )
    for digest, tenant in loaded.auth.keys.items():
        if not _SHA256_HEX.fullmatch(digest):
            # the key itself in place of its digest would never match, and would sit in the file in clear
            return "auth.keys: every key must be the sha256 hex digest of an API key (64 hex digits)"
        if not _TENANT_NAME.fullmatch(tenant):
            # a tenant name goes into every Redis key of the tenant: two names must never become one
            return (
                f"auth.keys.{digest[:8]}…: expected a tenant name of 1-64 of A-Z a-z 0-9 _ . -, "
                f"got {json.dumps(tenant)}"
            )
    return None
