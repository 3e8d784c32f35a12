"""The metric families every process records (README, "Metrics"): names, help, labels and buckets. The
hooks that write them are in metrics.py; prometheus-client registers each family here, at import."""

from __future__ import annotations

from typing import Final

from prometheus_client import Counter, Gauge, Histogram

#: run and job durations: runs last from milliseconds (echo) to the 30-minute upstream deadline
_LONG: Final = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)
#: waits that should be short: time to first token, pickup, cancel, a flush
_SHORT: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

HTTP_REQUESTS = Counter(
    "ix_http_requests_total",
    "HTTP requests answered, by route template and status",
    ["method", "route", "status"],
)
HTTP_DURATION = Histogram(
    "ix_http_request_duration_seconds",
    "HTTP request duration, from its head to its last byte (a stream: its whole life)",
    ["method", "route"],
    buckets=_SHORT,
)
CREATED = Counter(
    "ix_interactions_created_total",
    "Interactions created, by model, backend and mode (stateless, foreground, stream, background)",
    ["model", "backend", "mode"],
)
RUN_DURATION = Histogram("ix_run_duration_seconds", "Run duration, start to end", ["model"], buckets=_LONG)
FIRST_TOKEN = Histogram(
    "ix_time_to_first_token_seconds", "From a run's start to its first output", ["model"], buckets=_SHORT
)
TOKENS = Counter("ix_tokens_total", "Tokens reported by the upstream, by direction", ["model", "direction"])
RUNS_ENDED = Counter(
    "ix_runs_ended_total", "Runs ended, by status and (failed) error code", ["model", "status", "error_code"]
)
RUNS_IN_FLIGHT = Gauge("ix_runs_in_flight", "Runs under way", multiprocess_mode="livesum")
PICKUP = Histogram(
    "ix_job_pickup_seconds", "From a background job's enqueue to a worker taking it", buckets=_SHORT
)
LOST_RUNS = Counter("ix_lost_runs_total", "Lost runs the reaper looked after, by what it did", ["action"])
CANCELS = Counter("ix_cancels_total", "Cancels of a queued or running interaction")
CANCEL_SECONDS = Histogram(
    "ix_cancel_seconds", "From a cancel request to the run saved cancelled", buckets=_SHORT
)
UPSTREAM_ERRORS = Counter(
    "ix_upstream_errors_total", "Failed upstream calls, by backend and HTTP status", ["backend", "status"]
)
UPSTREAM_RETRIES = Counter("ix_upstream_retries_total", "Upstream calls retried", ["backend"])
ACTIVE_STREAMS = Gauge("ix_active_streams", "SSE streams open", multiprocess_mode="livesum")
STREAM_RESUMES = Counter("ix_stream_resumes_total", "Streams resumed with a last_event_id")
FLUSH_EVENTS = Histogram(
    "ix_event_log_flush_events",
    "Events written by one event-log flush",
    buckets=(0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000),
)
FLUSH_SECONDS = Histogram("ix_event_log_flush_seconds", "Duration of one event-log flush", buckets=_SHORT)
REDIS_ERRORS = Counter(
    "ix_redis_errors_total", "Redis commands that failed (unreachable, timed out)", ["where"]
)
OVER_LIMIT = Counter(
    "ix_limit_refusals_total", "Requests refused by a tenant's limit ([auth.limits]), by limit", ["limit"]
)
WEBHOOK_ATTEMPTS = Counter(
    "ix_webhook_attempts_total",
    "Webhook delivery attempts, by target kind (webhook, config, ping) and outcome (delivered, retry, "
    "failed, logged: a ping's failure)",
    ["kind", "outcome"],
)
WEBHOOK_ATTEMPT_SECONDS = Histogram(
    "ix_webhook_attempt_seconds",
    "One delivery attempt, to the receiver's response head",
    ["kind"],
    buckets=_SHORT,
)
WEBHOOK_EVENT_SECONDS = Histogram(
    "ix_webhook_event_delivery_seconds",
    "From an interaction's end to its receiver's 2xx (retries included)",
    ["kind"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 30.0, 60.0, 300.0, 3600.0, 86400.0),
)
TOOL_CALLS = Counter(
    "ix_tool_calls_total",
    "MCP tool calls the server made for its runs, by outcome (ok, error: the tool's or the call's, "
    "out_of_time: the run's time for tool calls ran out)",
    ["outcome"],
)
TOOL_CALL_SECONDS = Histogram(
    "ix_tool_call_seconds", "One MCP tool call, from its request to its result", buckets=_LONG
)
#: the usage totals (GET /{v}/usage), counted once an interaction's settle landed (observability/usage.py);
#: `tenant` is empty unless [metrics] usage_by_tenant
USAGE_INTERACTIONS = Counter(
    "ix_usage_interactions_total",
    "Interactions ended, as the usage totals count them",
    ["model", "status", "tenant"],
)
USAGE_TOKENS = Counter(
    "ix_usage_tokens_total", "Tokens of the interactions ended, by kind", ["model", "kind", "tenant"]
)
USAGE_CALLS = Counter(
    "ix_usage_model_calls_total", "Model calls of the interactions ended", ["model", "tenant"]
)
