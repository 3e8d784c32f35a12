"""The sections of server.toml and models.toml as typed Structs, with the ranges outside of which a value
cannot work; server/settings.py loads them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from . import backend_kinds
from .config_errors import declare_literals

# The ranges below are the ones outside of which a value cannot work (a timeout of 0, no web process), so
# that a typo fails at start instead of at the first request that needs the value.
Port = Annotated[int, msgspec.Meta(ge=1, le=65535)]
PositiveInt = Annotated[int, msgspec.Meta(ge=1)]
NonNegativeInt = Annotated[int, msgspec.Meta(ge=0)]
PositiveFloat = Annotated[float, msgspec.Meta(gt=0)]
NonNegativeFloat = Annotated[float, msgspec.Meta(ge=0)]
NonEmptyStr = Annotated[str, msgspec.Meta(min_length=1)]
_ENV_NAME = "the name of an environment variable (letters, digits and _)"
EnvName = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", description=_ENV_NAME)]
HttpUrl = Annotated[str, msgspec.Meta(pattern=r"^https?://[^/]", description="an http:// or https:// URL")]
if TYPE_CHECKING:
    BackendKind = str
else:  # the values a route may name, from the one table of them (a Literal made at run time: mypy sees str)
    BackendKind = Literal[tuple(backend_kinds.KINDS)]
AuthMode = Literal["open", "keys"]
StreamDisconnect = Literal["cancel", "continue"]
AppendFsync = Literal["always", "everysec", "no"]
LogFormat = Literal["text", "json"]
LogLevel = Literal["info", "debug", "warning", "error", "critical"]
declare_literals(BackendKind, AuthMode, StreamDisconnect, AppendFsync, LogFormat, LogLevel)


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


class Limits(Section):
    """A tenant's limits (README, "Limits"): 0 is none; a field left out of a tenant's own table is the
    default's ([auth.limits]). Read again when server.toml changes (server/limits/table.py)."""

    requests_per_minute: NonNegativeInt | None = None
    tokens_per_minute: NonNegativeInt | None = None
    #: a UTC day's, as the usage totals count it
    tokens_per_day: NonNegativeInt | None = None
    #: background interactions queued or running at once
    background_runs: NonNegativeInt | None = None
    #: interactions stored and not expired nor deleted
    stored_interactions: NonNegativeInt | None = None


class AuthSettings(Section):
    #: "open": any non-empty key is accepted and is its own tenant. "keys": only the listed keys.
    mode: AuthMode = "open"
    #: sha256 hex digest of an API key -> tenant name (mode "keys")
    keys: dict[str, str] = {}
    #: every tenant's limits (open mode's too) ...
    limits: Limits = msgspec.field(default_factory=Limits)
    #: ... and a tenant's own, by its name (open mode: the 32 hex digits of its key's digest)
    tenant_limits: dict[str, Limits] = {}


class StoreSettings(Section):
    ttl_seconds: PositiveInt = 55 * 24 * 3600
    #: how long a finished interaction's event log is kept for stream replays; afterwards the replay is
    #: rebuilt from the stored record
    event_log_ttl_seconds: PositiveInt = 3600
    max_chain_depth: PositiveInt = 5000
    #: the most members of one segment of a search index (scripts/_index.lua): at most Redis's
    #: zset-max-listpack-entries (128 by default), which keeps each segment in its compact encoding
    index_bucket_size: PositiveInt = 64
    idempotency_ttl_seconds: PositiveInt = 24 * 3600
    #: how long a day's usage totals (GET /{v}/usage) are kept after its last interaction ended
    usage_ttl_seconds: PositiveInt = 400 * 24 * 3600
    #: the longest any Redis command may take (blocking reads: their block time plus this); past it the
    #: request answers 503 UNAVAILABLE instead of waiting on a Redis that hangs
    redis_timeout_seconds: PositiveFloat = 2.0
    #: replicas that must have every write of a script before it counts as done (Redis WAIT), so that a
    #: failover loses nothing acknowledged; 0: Redis's asynchronous replication alone (README, "Sentinel")
    replica_acks: NonNegativeInt = 0
    #: the longest a script waits for them; past it the write stands, with a warning (store/replica_acks.py)
    replica_ack_timeout_ms: PositiveInt = 500


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
    #: every process looks for lost runs this often (with many processes, the fleet looks far more often)
    reaper_interval_seconds: PositiveFloat = 3.0

    @property
    def pickup_ms(self) -> int:
        """How long a queued job may wait before the reaper looks for it (and then again, while it waits)."""
        return int(self.pickup_seconds * 1000)


class WorkerSettings(Section):
    max_jobs: PositiveInt = 100
    #: how long an idle worker's wait for a queued job's wake-up lasts (a queued job wakes one worker at
    #: once, a job for later at its time); after 15 such waits without one, it reads the queue anyway, and
    #: every 15 it looks for due jobs nobody woke it for (runner/due_jobs.py)
    poll_delay_ms: PositiveInt = 2000
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


class LogSettings(Section):
    """Every process's logs (LOG_FORMAT, LOG_LEVEL and ACCESS_LOG in the environment override these)."""

    #: "text" (readable) or "json" (one object per line)
    format: LogFormat = "text"
    level: LogLevel = "info"
    #: one line per request on logger `server.access`
    access: bool = True


class MetricsSettings(Section):
    """Prometheus metrics (README, "Metrics"); METRICS, METRICS_PORT and METRICS_WORKER_PORT override."""

    #: record metrics and serve them at /metrics
    enabled: bool = True
    #: 0: /metrics on the API's port; N: on port N instead, by a listener of the launcher (same host)
    port: Annotated[int, msgspec.Meta(ge=0, le=65535)] = 0
    #: a `python -m workers` process serves its own /metrics on this port (0: none), for workers that do
    #: not share the web processes' PROMETHEUS_MULTIPROC_DIR
    worker_port: Annotated[int, msgspec.Meta(ge=0, le=65535)] = 0
    #: the usage counters (ix_usage_*) get a `tenant` label: a series per tenant, for a few tenants
    usage_by_tenant: bool = False


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
    #: one of the kinds of server/backend_kinds.py
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
        if not self.api_key_env or self.backend in backend_kinds.BUILTIN_MODELS:
            return None
        value = (os.environ if environ is None else environ).get(self.api_key_env)
        if value:
            return None
        state = "is empty" if value == "" else "is not set"
        return (
            f'model route "{self.match}" needs its API key in the environment variable '
            f"{self.api_key_env}, which {state}"
        )


class WebhookSettings(Section):
    """Webhooks: the Webhooks resource and a request's `webhook_config` (README, "Webhooks").

    The server key that seals signing secrets at rest comes from IX_WEBHOOK_KEYS (base64 of 32 bytes, the
    current key first, then older ones still to be read, comma-separated); without it, from `key_file`,
    made on first use: fine for one machine, while processes on several machines must share IX_WEBHOOK_KEYS.
    """

    #: the key file used when IX_WEBHOOK_KEYS is not set (relative: to embedded_redis.data_dir)
    key_file: NonEmptyStr = "webhook-server.key"
    #: the `iss` of the JWTs that sign `webhook_config` deliveries: this server's public base URL, where
    #: receivers fetch /.well-known/jwks.json ("": http://<http.host>:<http.port>)
    issuer: str = ""
    #: addresses webhook URIs may reach although private or loopback: CIDRs ("127.0.0.0/8") or host names
    #: ("localhost"); for local development and tests. Empty: only public addresses
    allow: list[NonEmptyStr] = []
    #: webhooks one tenant may have
    max_webhooks: PositiveInt = 20
    #: `webhook_config.uris` one interaction may name
    max_config_uris: PositiveInt = 5
    #: the largest `webhook_config.user_metadata`, as JSON
    max_user_metadata_bytes: PositiveInt = 4096
    #: one attempt's limit: connect, send, and the receiver's response head
    attempt_timeout_seconds: PositiveFloat = 10.0
    #: an event not delivered is retried with exponential backoff and jitter, from the first pause to the
    #: longest, until this long after its first attempt
    backoff_initial_seconds: PositiveFloat = 5.0
    backoff_max_seconds: PositiveFloat = 3600.0
    retry_for_seconds: PositiveFloat = 86400.0
    #: a webhook whose events failed (every retry) this many times in a row becomes
    #: `disabled_due_to_failed_deliveries`
    disable_after_failed_events: PositiveInt = 5
    #: the attempts kept per webhook for GET .../webhooks/{id}/deliveries
    deliveries_kept: PositiveInt = 50
    #: how long a replaced secret keeps signing after a rotation that keeps it (Google: 24 h), and how long
    #: a replaced JWKS key stays published
    secret_overlap_seconds: PositiveFloat = 86400.0
    #: the JWKS key that signs webhook_config deliveries is replaced once this old (30 days)
    signing_key_max_age_seconds: PositiveFloat = 2592000.0


class ToolSettings(Section):
    """Tools the server runs itself: remote MCP servers (`mcp_server` tools) and the loop around them."""

    #: one MCP tool call, from its request to its result (a slower call is an error result the model sees)
    mcp_call_timeout_seconds: PositiveFloat = 60.0
    #: connecting to an MCP server and listing its tools
    mcp_connect_timeout_seconds: PositiveFloat = 15.0
    #: every MCP call of one run together; past it, the run ends `incomplete` with what it made
    mcp_run_timeout_seconds: PositiveFloat = 900.0
    #: model calls of one run: a loop that still wants tools after this many ends `incomplete`
    max_model_calls: PositiveInt = 25
    #: the largest tool result kept and shown to the model, as JSON; a larger one is cut, and says so
    max_result_bytes: PositiveInt = 65536
    #: MCP servers a run may name
    max_servers: PositiveInt = 8


class AgentSettings(Section):
    """The Agents resource (README, "Agents")."""

    #: agents one tenant may have; one more is a 429 RESOURCE_EXHAUSTED
    max_agents: PositiveInt = 100


class TriggerSettings(Section):
    """The Triggers resource: scheduled interactions (README, "Triggers")."""

    #: triggers one tenant may have; one more is a 429 RESOURCE_EXHAUSTED
    max_triggers: PositiveInt = 100
    #: the shortest gap a schedule may have between two of its times (over its next 100); a shorter one is
    #: a 400 naming `schedule`. Below 60, six-field schedules (seconds first) can pass
    min_interval_seconds: PositiveInt = 60
    #: a scheduled time this late when a worker reaches it (nothing ran then) is recorded `skipped`, not run;
    #: and every this often each process sweeps for triggers whose fire job is twice this late (lost)
    missed_after_seconds: PositiveInt = 60
    #: an execution's interaction still running this long after it started is `timed_out` (and cancelled),
    #: when the trigger sets no `execution_timeout_seconds`; and the most a trigger may set
    execution_timeout_seconds: PositiveInt = 600
    max_execution_timeout_seconds: PositiveInt = 86400
    #: executions kept per trigger, the oldest dropped
    executions_kept: PositiveInt = 1000


class OutboundSettings(Section):
    """Every call out: upstreams, webhooks, MCP servers (README, "Proxies and CA bundles"). Proxies are the
    environment's: HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY."""

    #: a PEM file of CA certificates trusted beside the default roots (relative: to the checkout)
    ca_bundle: str = ""


class ServerToml(Section):
    http: HttpSettings = msgspec.field(default_factory=HttpSettings)
    auth: AuthSettings = msgspec.field(default_factory=AuthSettings)
    store: StoreSettings = msgspec.field(default_factory=StoreSettings)
    runner: RunnerSettings = msgspec.field(default_factory=RunnerSettings)
    worker: WorkerSettings = msgspec.field(default_factory=WorkerSettings)
    upstream_retry: UpstreamRetrySettings = msgspec.field(default_factory=UpstreamRetrySettings)
    echo: EchoSettings = msgspec.field(default_factory=EchoSettings)
    embedded_redis: EmbeddedRedisSettings = msgspec.field(default_factory=EmbeddedRedisSettings)
    log: LogSettings = msgspec.field(default_factory=LogSettings)
    metrics: MetricsSettings = msgspec.field(default_factory=MetricsSettings)
    webhooks: WebhookSettings = msgspec.field(default_factory=WebhookSettings)
    tools: ToolSettings = msgspec.field(default_factory=ToolSettings)
    agents: AgentSettings = msgspec.field(default_factory=AgentSettings)
    triggers: TriggerSettings = msgspec.field(default_factory=TriggerSettings)
    outbound: OutboundSettings = msgspec.field(default_factory=OutboundSettings)


class ModelsToml(Section):
    models: list[ModelRoute] = []
