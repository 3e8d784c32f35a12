"""`python -m workers` (what `make worker` runs): a worker process. SIGTERM/SIGINT shut it down gracefully.

Its Redis is REDIS_URL or, when that is not set, the private Redis of the `make run` that is running on
this checkout's data (found through the server lock); with neither it refuses to start rather than guess.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import signal
import sys
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

import msgspec

from server import settings as settings_module
from server.config_errors import ConfigError
from server.launch import lock
from server.observability import export, logs
from server.outbound import Outbound
from server.settings import Settings
from server.store.connection import RedisUnavailable, RedisUrlError

log = logging.getLogger("workers")


def arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m workers",
        description="A worker of the interaction server: runs background interactions from the queue.",
        epilog="Environment: REDIS_URL (default: the Redis of the `make run` of this checkout), IX_CONFIG, "
        "IX_MODELS, IX_DATA_DIR, LOG_FORMAT, LOG_LEVEL, METRICS, METRICS_WORKER_PORT, "
        "PROMETHEUS_MULTIPROC_DIR; for calls out HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY, "
        "SSL_CERT_FILE, SSL_CERT_DIR. Stop it with Ctrl-C or SIGTERM: running jobs get "
        "worker.shutdown_grace_seconds.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version('interaction-server')}")
    return parser.parse_args(argv)


def with_redis(settings: Settings) -> Settings:
    if settings.redis_url is not None:
        return settings
    holder = lock.running(settings.data_dir)
    if holder is None or not holder.redis_url:
        raise ConfigError(
            f"REDIS_URL is not set and no `make run` is running on {settings.data_dir}: set REDIS_URL to the "
            "Redis of the web processes"
        )
    return msgspec.structs.replace(settings, redis_url=holder.redis_url)


def start_metrics(settings: Settings, found_by_lock: bool) -> bool:
    """This worker's metrics: in the web processes' directory when it shares theirs (given, or `make
    run`'s own under its data dir when the lock found it), else on `[metrics] worker_port`, else none."""
    if not settings.metrics.enabled:
        return False
    shared = settings.data_dir / "metrics"
    if found_by_lock and not export.multiprocess() and shared.is_dir():
        os.environ[export.ENV] = str(shared)
    port = settings.metrics.worker_port
    if port and export.multiprocess():
        raise ConfigError(
            f"metrics.worker_port: this worker writes to the web processes' {export.ENV} "
            f"({os.environ[export.ENV]}), where their /metrics counts it; a port of its own would count "
            "it twice: set one or the other"
        )
    if export.multiprocess():
        # it may start before the server that makes the directory
        Path(os.environ[export.ENV]).mkdir(parents=True, exist_ok=True)
    if not port and not export.multiprocess():
        log.info("this worker's metrics are not exported: set %s or metrics.worker_port", export.ENV)
        return False
    if port:
        try:
            export.serve(port, settings.http.host, export.registry(None))
        except OSError as exc:
            raise ConfigError(
                f"metrics.worker_port: cannot listen on {port}: {exc.strerror or exc}"
            ) from None
    return True


async def work(settings: Settings, metrics_on: bool) -> None:
    # imported here, not at the top: prometheus-client picks its mode (PROMETHEUS_MULTIPROC_DIR) when it
    # is first imported, and start_metrics may set that variable
    from server.observability import metrics
    from server.runtime import Runtime
    from server.worker_host import WorkerHost

    metrics.start(metrics_on, [(route.match, route.backend) for route in settings.models])
    runtime = await Runtime.open(settings, process="worker")
    host = WorkerHost(runtime)
    await host.start()
    # what is built so far lives as long as the process: keep it out of the collector's full passes
    gc.freeze()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    redis_url = logs.redact_url(settings.redis_url or "")
    log.info("worker ready (queue %s, Redis %s)", settings.worker.queue_name, redis_url)
    await stop.wait()
    await host.stop()
    await runtime.close()
    # the metrics still in this process's buffers, then its live gauges stop counting
    metrics.stop()


def main(argv: Sequence[str] | None = None) -> int:
    arguments(argv)
    logs.configure_early("worker")
    try:
        loaded = settings_module.load()
        settings = with_redis(loaded)
        Outbound.from_settings(settings.outbound)  # a proxy or CA bundle it cannot use: said in one line
        logs.configure("worker", settings.log.format, settings.log.level)
        metrics_on = start_metrics(settings, found_by_lock=loaded.redis_url is None)
    except ConfigError as exc:
        logs.console(logging.ERROR, str(exc))
        return 2
    for warning in settings_module.warnings(settings):
        log.warning("%s", warning)
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    try:
        asyncio.run(work(settings, metrics_on))
    except (RedisUnavailable, RedisUrlError) as exc:
        logs.console(logging.ERROR, str(exc))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
