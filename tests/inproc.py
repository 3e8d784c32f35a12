"""The real app in the test process: `create_app(settings)` served over real HTTP on 127.0.0.1 by granian's
embeddable asyncio server (`granian.server.embed.Server`), with the worker embedded, against a private
redis-server of its own on a free port.

Nothing is buffered or faked between a client and the app: streams arrive event by event and a client
that goes away is a closed connection, as with `python -m server`; only the process boundary is gone.

    InProcess     served on the running event loop (an async test's own loop): the test can reach the
                  runtime (`state`) and gate a scripted backend with asyncio objects while a client reads
    ThreadedApp   the same, on a loop of its own in a daemon thread of the test process: for tests that
                  block (the sync SDK, `httpx.Client`, schemathesis) while the server must go on serving

Tests that need processes (kills, restarts, a cancel that crosses processes, the launcher, the README's
topologies) use the subprocess stacks of tests/support.py instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import AsyncIterator, Coroutine, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import httpx
import uvloop
from granian.constants import HTTPModes, Interfaces
from granian.http import HTTP1Settings
from granian.server.embed import Server
from litestar import Litestar

from server import settings as settings_module
from server.api.state import AppState
from server.app import create_app
from server.launch.redis_process import RedisProcess, free_port
from server.settings import Settings
from server.upstream.base import Backend

from .support import TEST_CONFIG, merged, start_own_redis, toml_of

T = TypeVar("T")

#: how long a start (lifespan, Redis, the first heartbeat) may take
_START_SECONDS = 20.0


def write_settings(
    workdir: Path,
    redis_url: str,
    config: dict[str, dict[str, Any]] | None = None,
    models: str = "",
    env: Mapping[str, str] | None = None,
) -> Settings:
    """The settings a `python -m server` of the tests would load: TEST_CONFIG (and `config`) in a
    server.toml, `models` in a models.toml, the worker embedded; read by the server's own loader."""
    workdir.mkdir(parents=True, exist_ok=True)
    config_path, models_path = workdir / "server.toml", workdir / "models.toml"
    config_path.write_text(toml_of(merged(TEST_CONFIG, config)))
    models_path.write_text(models)
    environ = {
        "REDIS_URL": redis_url,
        "IX_CONFIG": str(config_path),
        "IX_MODELS": str(models_path),
        "EMBEDDED_WORKER": "1",
        # its data (the webhooks' key file) in the test's directory, never the checkout's var/
        "IX_DATA_DIR": str(workdir / "var"),
        **(env or {}),
    }
    return settings_module.load(environ)


def build_app(settings: Settings) -> Litestar:
    return create_app(settings)


class InProcess:
    """The app on the running event loop, on a real socket. `backends` are added to the model router under
    their names, next to the built-in echo models (a scripted backend of a test, say)."""

    def __init__(
        self,
        workdir: Path,
        *,
        config: dict[str, dict[str, Any]] | None = None,
        models: str = "",
        env: Mapping[str, str] | None = None,
        backends: Mapping[str, Backend] | None = None,
    ) -> None:
        self.workdir = workdir
        self.redis = RedisProcess(workdir / "redis", port=free_port(), appendonly=False)
        self.settings = write_settings(workdir, self.redis.url, config, models, env)
        self.backends = dict(backends or {})
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.app = build_app(self.settings)
        self.server = Server(
            self.app,
            address="127.0.0.1",
            port=self.port,
            interface=Interfaces.ASGI,
            # as `python -m server` serves (server/__main__.py)
            http=HTTPModes.http1,
            http1_settings=HTTP1Settings(
                header_read_timeout=round(self.settings.http.header_read_timeout_seconds * 1000)
            ),
            backpressure=self.settings.http.max_connections,
            log_enabled=False,
        )
        self._serving: asyncio.Task[None] | None = None

    @property
    def redis_url(self) -> str:
        return self.redis.url

    @property
    def state(self) -> AppState:
        """What the handlers use (the creator, control, the event log), once started."""
        state: AppState = self.app.state.ix
        return state

    async def start(self) -> None:
        # a second or so of blocking at most, before anything of this loop serves
        start_own_redis(self.redis)
        self._serving = asyncio.create_task(self.server.serve())
        try:
            await self._until_ready()
        except BaseException:
            await self.stop()
            raise
        router = self.state.creator.router
        router.builtin.update(self.backends)

    async def _until_ready(self) -> None:
        """Until /readyz says 200: the lifespan ran (Redis answers) and the embedded worker beat."""
        deadline = time.monotonic() + _START_SECONDS
        async with httpx.AsyncClient(base_url=self.url, timeout=2) as client:
            while True:
                assert self._serving is not None
                if self._serving.done():
                    raise RuntimeError(f"the in-process server ended at start: {self._serving!r}")
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get("/readyz")).status_code == 200:
                        return
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the in-process server was not ready within {_START_SECONDS:g} s")
                await asyncio.sleep(0.01)

    async def stop(self) -> None:
        """Stop serving (the lifespan's end settles this process's runs), then the Redis."""
        try:
            if self._serving is not None and not self._serving.done():
                self.server.stop()  # type: ignore[no-untyped-call]  # granian's embed is untyped
                await asyncio.wait_for(self._serving, timeout=30)
        finally:
            self._serving = None
            self.redis.stop()


@contextlib.asynccontextmanager
async def serving(
    workdir: Path,
    *,
    config: dict[str, dict[str, Any]] | None = None,
    models: str = "",
    env: Mapping[str, str] | None = None,
    backends: Mapping[str, Backend] | None = None,
) -> AsyncIterator[InProcess]:
    """An InProcess app, started on this loop and stopped afterwards."""
    app = InProcess(workdir, config=config, models=models, env=env, backends=backends)
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


class ThreadedApp:
    """An InProcess app on an event loop of its own, in a daemon thread of the test process."""

    def __init__(self, workdir: Path, **options: Any) -> None:
        # uvloop, as `python -m server` runs its web processes (granian's Loops.uvloop)
        self.loop = uvloop.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="in-process-server", daemon=True)
        self.options = options
        self.workdir = workdir
        self.inner: InProcess | None = None

    @property
    def app(self) -> InProcess:
        assert self.inner is not None, "not started"
        return self.inner

    @property
    def url(self) -> str:
        return self.app.url

    @property
    def redis_url(self) -> str:
        return self.app.redis_url

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        """Run `coro` on the server's loop (where its runtime's clients live) and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def start(self) -> ThreadedApp:
        self.thread.start()

        async def start() -> InProcess:
            # built on the server's loop: the app's objects belong to it
            app = InProcess(self.workdir, **self.options)
            await app.start()
            return app

        self.inner = self.call(start(), timeout=_START_SECONDS + 10)
        return self

    def stop(self) -> None:
        try:
            if self.inner is not None:
                self.call(self.inner.stop(), timeout=40)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)
            if not self.thread.is_alive():
                self.loop.close()


@contextlib.contextmanager
def threaded(workdir: Path, **options: Any) -> Iterator[ThreadedApp]:
    """A ThreadedApp, started and stopped afterwards; `options` as for InProcess."""
    app = ThreadedApp(workdir, **options)
    try:
        yield app.start()
    finally:
        app.stop()


@contextlib.contextmanager
def environment(values: Mapping[str, str]) -> Iterator[None]:
    """Variables the app reads at call time (a route's API key), set for as long as it runs."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
