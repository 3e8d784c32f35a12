"""Typed settings: the documented defaults in config/*.toml, then the environment on top.

Environment overrides: REDIS_URL, REDIS_QUEUE_URL, HOST, PORT, WEB_PROCESSES, EMBEDDED_WORKER (true/false,
1/0, yes/no), IX_DATA_DIR, LOG_FORMAT, LOG_LEVEL (either in any case), ACCESS_LOG and METRICS (booleans),
METRICS_PORT, METRICS_WORKER_PORT, IX_CONFIG (another server.toml), IX_MODELS (another models.toml). The
Redis URLs, IX_CONFIG and IX_MODELS count as unset when empty; any other of them set to an empty value is an
error.

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
from typing import TypeVar

import msgspec
from msgspec import inspect as mi

from . import redis_env
from .config_errors import (
    ConfigError,
    describe,
    field_type,
    syntax_problem,
    unwrap,
    validation_problem,
)
from .sections import (
    AgentSettings,
    AppendFsync,
    AuthMode,
    AuthSettings,
    BackendKind,
    EchoSettings,
    EmbeddedRedisSettings,
    EnvName,
    HttpSettings,
    HttpUrl,
    LogSettings,
    MetricsSettings,
    ModelRoute,
    ModelsToml,
    NonEmptyStr,
    NonNegativeFloat,
    NonNegativeInt,
    OutboundSettings,
    Port,
    PositiveFloat,
    PositiveInt,
    RunnerSettings,
    Section,
    ServerToml,
    StoreSettings,
    StreamDisconnect,
    ToolSettings,
    TriggerSettings,
    UpstreamRetrySettings,
    WebhookSettings,
    WorkerSettings,
)

ROOT_DIR = Path(__file__).resolve().parent.parent
CONFIG_DIR = ROOT_DIR / "config"

log = logging.getLogger(__name__)

__all__ = [
    "CONFIG_DIR",
    "ENV_OVERRIDES",
    "ROOT_DIR",
    "AppendFsync",
    "AuthMode",
    "AuthSettings",
    "BackendKind",
    "EchoSettings",
    "EmbeddedRedisSettings",
    "EnvName",
    "HttpSettings",
    "HttpUrl",
    "LogSettings",
    "MetricsSettings",
    "ModelRoute",
    "ModelsToml",
    "NonEmptyStr",
    "NonNegativeFloat",
    "NonNegativeInt",
    "OutboundSettings",
    "Port",
    "PositiveFloat",
    "PositiveInt",
    "RunnerSettings",
    "Section",
    "ServerToml",
    "Settings",
    "StoreSettings",
    "StreamDisconnect",
    "UpstreamRetrySettings",
    "WorkerSettings",
    "load",
    "parse_bool",
    "parse_int",
    "warnings",
]

T = TypeVar("T")


class Settings(msgspec.Struct, kw_only=True):
    #: None: no REDIS_URL, so `python -m server` starts the embedded Redis (and sets REDIS_URL for its
    #: web processes)
    redis_url: str | None
    #: arq's queue, the running set and the signals on a Redis of their own (required with a Cluster)
    redis_queue_url: str | None = None
    http: HttpSettings
    auth: AuthSettings
    store: StoreSettings
    runner: RunnerSettings
    worker: WorkerSettings
    upstream_retry: UpstreamRetrySettings
    echo: EchoSettings
    embedded_redis: EmbeddedRedisSettings
    log: LogSettings
    metrics: MetricsSettings
    webhooks: WebhookSettings
    tools: ToolSettings
    agents: AgentSettings
    triggers: TriggerSettings
    outbound: OutboundSettings
    models: list[ModelRoute]
    #: the server.toml these were read from (IX_CONFIG, or config/server.toml)
    config_file: Path = CONFIG_DIR / "server.toml"

    @property
    def data_dir(self) -> Path:
        return ROOT_DIR / self.embedded_redis.data_dir


def load(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings of this process. Raises `ConfigError` (one line) for any mistake in them."""
    env = dict(os.environ if environ is None else environ)
    server = _load_file(ServerToml, env, "IX_CONFIG", "server.toml")
    models = _load_file(ModelsToml, env, "IX_MODELS", "models.toml")
    server = _apply_environment(server, env)
    # every section of server.toml, as loaded
    sections = {name: getattr(server, name) for name in ServerToml.__struct_fields__}
    url, queue_url = redis_env.urls(env)
    config = Path(env.get("IX_CONFIG") or CONFIG_DIR / "server.toml")
    return Settings(
        redis_url=url, redis_queue_url=queue_url, models=models.models, config_file=config, **sections
    )


def load_auth(path: Path) -> AuthSettings:
    """The [auth] of server.toml at `path` as the file says now (its limits apply without a restart:
    server/limits/); `ConfigError` for any mistake in the file, as at start."""
    return _load_file(ServerToml, {"IX_CONFIG": str(path)}, "IX_CONFIG", "server.toml").auth


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
    if settings.auth.mode == "keys":
        named = set(settings.auth.keys.values())
        found += [
            f"auth.tenant_limits.{tenant}: no key of auth.keys names this tenant; its limits apply to none"
            for tenant in settings.auth.tenant_limits
            if tenant not in named
        ]
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
    "LOG_FORMAT": ("log", "format"),
    "LOG_LEVEL": ("log", "level"),
    "ACCESS_LOG": ("log", "access"),
    "METRICS": ("metrics", "enabled"),
    "METRICS_PORT": ("metrics", "port"),
    "METRICS_WORKER_PORT": ("metrics", "worker_port"),
}
#: variables whose values are names, taken in any case (LOG_LEVEL=DEBUG as much as debug)
_ANY_CASE = frozenset({"LOG_FORMAT", "LOG_LEVEL"})


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
            value = _parse_env(text.lower() if variable in _ANY_CASE else text, info)
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
#: names a tenant may not have: a run's job id starts with its tenant's name, and the queue's other kinds of
#: jobs with these (store/jobs.py KINDS, which tests/test_config.py holds this to)
RESERVED_TENANTS = frozenset({"whev", "wh", "del", "trig"})
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
        if not _TENANT_NAME.fullmatch(tenant) or tenant in RESERVED_TENANTS:
            # a tenant name goes into every Redis key of the tenant: two names must never become one
            return (
                f"auth.keys.{digest[:8]}…: expected a tenant name of 1-64 of A-Z a-z 0-9 _ . - other than "
                f"{', '.join(sorted(RESERVED_TENANTS))}, got {json.dumps(tenant)}"
            )
    return None
