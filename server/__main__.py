"""`python -m server` (what `make run` runs): the web server under granian.

Without REDIS_URL it starts the embedded default: a private redis-server on a unix socket with its data
under var/ (the checkout's server lock says who runs it), and a worker inside each web process, so it
answers with no configuration at all. Nothing is started until the configuration, the lock and the port
are known to be good, and what was started is stopped on every way out.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import shutil
import signal
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any, cast

from granian import Granian
from granian.constants import HTTPModes, Interfaces, Loops
from granian.http import HTTP1Settings
from granian.log import LogLevels
from redis.exceptions import RedisError

from . import settings as settings_module
from .config_errors import ConfigError
from .launch import listen, orphans
from .launch.lock import Holder, LockHeld, ServerLock
from .launch.redis_process import RedisProcess, RedisStartError
from .observability import export, logs
from .outbound import Outbound
from .settings import Settings
from .store import connection

USAGE = """\
Environment: REDIS_URL (default: a private Redis under IX_DATA_DIR, var/ of the checkout), HOST, PORT,
WEB_PROCESSES, EMBEDDED_WORKER (1/0, default 1), IX_CONFIG (server.toml), IX_MODELS (models.toml),
LOG_FORMAT (text/json), LOG_LEVEL (default info), ACCESS_LOG (1/0, default 1), METRICS (1/0, default 1),
METRICS_PORT (default: /metrics on PORT), PROMETHEUS_MULTIPROC_DIR (default: IX_DATA_DIR/metrics, or a
temporary directory with REDIS_URL). Calls out: HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY, SSL_CERT_FILE,
SSL_CERT_DIR.
Stop it with Ctrl-C or SIGTERM: running interactions are settled first."""


def arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m server",
        description="The interaction server: the Gemini Interactions API, with its state in Redis.",
        epilog=USAGE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version('interaction-server')}")
    parser.add_argument(
        "--delete-data",
        action="store_true",
        help="delete the private Redis's data (every stored interaction) and exit; refused while a server "
        "runs on it",
    )
    return parser.parse_args(argv)


def banner(url: str, redis_url: str, embedded: bool) -> str:
    lines = [
        f"Interaction server on {url}  (Redis: {redis_url}{', embedded' if embedded else ''})",
        "",
        "Try it:",
        f"  curl -s {url}/v1beta/interactions -H 'x-goog-api-key: any-key' \\",
        '       -H \'content-type: application/json\' -d \'{"model": "echo", "input": "Hello there"}\'',
        "",
        "  from google import genai",
        f"  client = genai.Client(api_key='any-key', http_options={{'base_url': '{url}'}})",
        "  reply = client.interactions.create(model='echo', input='Hello there')",
        "  print(reply.id, reply.output_text)",
        "",
        f"API reference: {url}/docs    Stop: Ctrl-C",
    ]
    if embedded:
        lines += ["More workers against this Redis:  make worker", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    logs.configure_early("launcher")
    try:
        settings = settings_module.load()
        # a proxy variable or CA bundle that cannot be used stops the start here, in one line, rather
        # than in every web process
        Outbound.from_settings(settings.outbound)
    except ConfigError as exc:
        return fail(str(exc), 2)
    logs.configure("launcher", settings.log.format, settings.log.level)
    if args.delete_data:
        return delete_data(settings)
    for warning in settings_module.warnings(settings):
        logs.console(logging.WARNING, warning)
    lock = ServerLock(settings.data_dir) if settings.redis_url is None else None
    redis_process: RedisProcess | None = None
    url = listen.base_url(settings.http.host, settings.http.port)
    try:
        if lock is not None:
            lock.acquire(Holder(pid=os.getpid(), http=url))
        listen.check_free(settings.http.host, settings.http.port)
        if settings.metrics.enabled and settings.metrics.port:
            if settings.metrics.port == settings.http.port:
                return fail(
                    "metrics.port: must differ from http.port (0 serves /metrics on the API's port)", 2
                )
            listen.check_free(settings.http.host, settings.metrics.port)
        if lock is not None:
            redis_process = start_redis(settings, lock, url)
        check_redis(settings)
        return serve(settings, url, embedded=redis_process is not None)
    except (LockHeld, listen.PortInUse, RedisStartError, connection.RedisUnavailable) as exc:
        return fail(str(exc), 1)
    except connection.RedisUrlError as exc:
        return fail(str(exc), 2)
    finally:
        if redis_process is not None:
            redis_process.stop()
        if lock is not None:
            lock.release()


def check_redis(settings: Settings) -> None:
    """Both Redis URLs answer (REDIS_URL is the embedded Redis's by now, when it was not set)."""
    asyncio.run(connection.check(os.environ["REDIS_URL"]))
    if settings.redis_queue_url is not None:
        asyncio.run(connection.check(settings.redis_queue_url, "REDIS_QUEUE_URL"))


def start_redis(settings: Settings, lock: ServerLock, url: str) -> RedisProcess:
    embedded = settings.embedded_redis
    process = RedisProcess(settings.data_dir / "redis", appendfsync=embedded.appendfsync).start()
    lock.update(Holder(pid=os.getpid(), http=url, redis_url=process.url))
    # the web processes read the settings again: they find the Redis here
    os.environ["REDIS_URL"] = process.url
    return process


def serve(settings: Settings, url: str, *, embedded: bool) -> int:
    os.environ[orphans.PARENT_ENV] = str(os.getpid())
    # before granian forks the web processes: they all write to this directory
    metrics_dir, listener = start_metrics(settings, embedded)
    redis_url = logs.redact_url(os.environ["REDIS_URL"])
    announcer = listen.announce_when_listening(
        settings.http.host, settings.http.port, announcement(url, redis_url, embedded)
    )
    server = Granian(
        "server.app:create_app",
        factory=True,
        address=settings.http.host,
        port=settings.http.port,
        interface=Interfaces.ASGI,
        workers=settings.http.web_processes,
        loop=Loops.uvloop,
        # the web processes log as this one does; granian's access log stays off (server.access is ours)
        log_level=LogLevels(settings.log.level),
        log_dictconfig=logs.dictconfig(
            "web", settings.log.format, settings.log.level, parent_pid=os.getpid()
        ),
        log_access=False,
        # HTTP/1 only: in "auto" granian reads a connection's first bytes (to tell HTTP/2) with no timeout,
        # so a client that connected and sent nothing was held forever
        http=HTTPModes.http1,
        backpressure=settings.http.max_connections,
        http1_settings=HTTP1Settings(
            header_read_timeout=round(settings.http.header_read_timeout_seconds * 1000)
        ),
    )
    try:
        server.serve()
    except SystemExit as exc:
        # granian exits with 1 when a web process ended on its own (a failed start: its log says why)
        return exc.code if isinstance(exc.code, int) else 1
    finally:
        with contextlib.suppress(OSError):
            os.kill(announcer, signal.SIGTERM)
            os.waitpid(announcer, 0)
        if listener is not None:
            listener.shutdown()
        if metrics_dir is not None and metrics_dir[1]:
            export.remove(metrics_dir[0])
    return 0


def start_metrics(settings: Settings, embedded: bool) -> tuple[tuple[Path, bool] | None, Any]:
    """The web processes' shared metrics directory, and (`[metrics] port`) the scrape's own listener:
    one in this process, which outlives any web process and so answers for all of them."""
    if not settings.metrics.enabled:
        return None, None
    directory = export.prepare_directory(settings.data_dir if embedded else None)
    if not settings.metrics.port:
        return directory, None
    # the queue is on REDIS_QUEUE_URL's Redis when there is one
    redis_url = settings.redis_queue_url or os.environ["REDIS_URL"]
    client = connection.sync_client(redis_url, settings.store.redis_timeout_seconds)
    queue = settings.worker.queue_name

    def depth() -> int | None:
        try:
            return cast(int, client.zcard(queue))
        except (RedisError, OSError):
            return None

    registry = export.registry(export.QueueDepth(depth))
    return directory, export.serve(settings.metrics.port, settings.http.host, registry)


def delete_data(settings: Settings) -> int:
    data_dir = settings.data_dir
    lock = ServerLock(data_dir)
    try:
        # held while deleting, so no server starts on half-deleted data
        lock.acquire(Holder(pid=os.getpid(), http="(deleting the data)"))
    except LockHeld as exc:
        return fail(str(exc), 1)
    try:
        if not (data_dir / "redis").exists():
            print(f"nothing to delete in {data_dir}")
            return 0
        shutil.rmtree(data_dir / "redis")
        print(f"deleted {data_dir / 'redis'}: every interaction stored by the embedded Redis")
        return 0
    finally:
        lock.release()


def announcement(url: str, redis_url: str, embedded: bool) -> str | Callable[[], str]:
    """The banner for a person at a terminal, or in the JSON format one log line, made when it is printed."""
    if not logs.json_format():
        return banner(url, redis_url, embedded)
    message = f"Interaction server on {url} (Redis: {redis_url}{', embedded' if embedded else ''})"
    launcher = os.getpid()
    return lambda: logs.render("server", message, launcher)


def fail(message: str, status: int) -> int:
    logs.console(logging.ERROR, message)
    return status


if __name__ == "__main__":
    sys.exit(main())
