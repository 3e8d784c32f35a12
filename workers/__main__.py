"""`python -m workers` (what `make worker` runs): a worker process. SIGTERM/SIGINT shut it down gracefully.

Its Redis is REDIS_URL or, when that is not set, the private Redis of the `make run` that is running on
this checkout's data (found through the server lock); with neither it refuses to start rather than guess.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal
import sys
from collections.abc import Sequence
from importlib.metadata import version

import msgspec

from server import settings as settings_module
from server.config_errors import ConfigError
from server.launch import lock
from server.observability import logs
from server.runtime import Runtime
from server.settings import Settings
from server.store.connection import RedisUnavailable, RedisUrlError
from server.worker_host import WorkerHost

log = logging.getLogger("workers")


def arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m workers",
        description="A worker of the interaction server: runs background interactions from the queue.",
        epilog="Environment: REDIS_URL (default: the Redis of the `make run` of this checkout), IX_CONFIG, "
        "IX_MODELS, IX_DATA_DIR, LOG_FORMAT, LOG_LEVEL. Stop it with Ctrl-C or SIGTERM: running jobs get "
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


async def work(settings: Settings) -> None:
    runtime = await Runtime.open(settings)
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


def main(argv: Sequence[str] | None = None) -> int:
    arguments(argv)
    logs.configure_early("worker")
    try:
        settings = with_redis(settings_module.load())
    except ConfigError as exc:
        logs.console(logging.ERROR, str(exc))
        return 2
    logs.configure("worker", settings.log.format, settings.log.level)
    for warning in settings_module.warnings(settings):
        log.warning("%s", warning)
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    try:
        asyncio.run(work(settings))
    except (RedisUnavailable, RedisUrlError) as exc:
        logs.console(logging.ERROR, str(exc))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
