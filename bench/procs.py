"""The processes of a bench run, and what /proc says about them (CPU time, RSS).

A private redis-server on a free loopback port, the production server (`python -m server`, granian),
worker processes (`python -m workers`), the baseline (`python -m bench.baseline_app`, granian too) and,
for scenarios 6 and 8, the fake upstream in a process of its own (`python -m bench.upstream_server`), each
in its own process group so that it is stopped with everything it spawned, and only that.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from server.launch.redis_process import RedisProcess, free_port

from .client import Connection

ROOT = Path(__file__).resolve().parent.parent
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")

#: the key the stack's server and workers call the back of scenario 19 with (its route's `api_key_env`):
#: the back's tenant, whose agent the front's agent runs are
BACK_KEY_ENV = "IX_BENCH_BACK_KEY"
BACK_KEY = "bench-back-key"

#: variables of the caller's environment that would point the stack elsewhere (see `Stack.env`)
_OURS = frozenset(
    "REDIS_URL REDIS_QUEUE_URL HOST PORT WEB_PROCESSES EMBEDDED_WORKER IX_CONFIG IX_MODELS".split()
)


# -- /proc -----------------------------------------------------------------------------------------------


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name may hold spaces and parentheses: the fields start after the last ")"
    return raw[raw.rindex(")") + 2 :].split()


def descendants(pid: int) -> list[int]:
    """`pid` and every process below it."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields is not None:
                parents.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo += parents.get(current, [])
    return found


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of these processes (those still alive), in seconds."""
    ticks = 0
    for pid in pids:
        fields = _stat_fields(pid)
        if fields is not None:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / CLOCK_TICKS


def rss_bytes(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_SIZE
    except OSError:
        return 0


def open_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def fd_limit(pid: int) -> int | None:
    """The process's soft RLIMIT_NOFILE (`ulimit -n`), None when unlimited or unknown."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
            if line.startswith("Max open files"):
                return int(line.split()[3]) if line.split()[3].isdigit() else None
    return None


def children_cpu_seconds() -> float:
    """CPU time of this process's children that have been waited for (the load generators)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def own_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


# -- processes -------------------------------------------------------------------------------------------


class Child:
    """A process of ours in its own session; stopped by its process group."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], log_path: Path) -> None:
        self.name = name
        self.args = args
        self.env = env
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        #: where this start's output begins in the log, which a name started again appends to
        self.log_start = 0

    def start(self) -> Child:
        with self.log_path.open("ab") as log:
            self.log_start = log.tell()
            self.proc = subprocess.Popen(
                self.args,
                env=self.env,
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def pids(self) -> list[int]:
        return descendants(self.pid)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def terminate(self) -> None:
        """SIGTERM to its process group, without waiting (see `stop`)."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)

    def output(self) -> str:
        """What this start of it wrote (the log's earlier lines are another process's)."""
        with self.log_path.open("rb") as log:
            log.seek(self.log_start)
            return log.read().decode(errors="replace")

    async def wait_for_line(self, text: str, within: float) -> None:
        """Until this start's output holds `text` (what it says once it is up: scenarios 8, 10 and 18 each
        start an "upstream", whose first "ready" must not stand for the next); exiting first is an error."""
        deadline = time.monotonic() + within
        while text not in self.output():
            if not self.alive():
                raise RuntimeError(f"{self.name} exited at start:\n{self.log()[-3000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not start:\n{self.log()[-3000:]}")
            await asyncio.sleep(0.05)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


class WebServer:
    """An HTTP server of ours (the production server or the baseline) on a free loopback port."""

    def __init__(self, child: Child, port: int, processes: int) -> None:
        self.child = child
        self.port = port
        self.processes = processes
        self.url = f"http://127.0.0.1:{port}"

    def pids(self) -> list[int]:
        return self.child.pids()

    def serving_pids(self) -> list[int]:
        """The processes that serve requests: granian's workers (its main process only supervises)."""
        pids = self.pids()
        return pids[1:] if len(pids) > 1 else pids

    async def wait_ready(self, within: float = 30.0) -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if not self.child.alive():
                raise RuntimeError(f"{self.child.name} exited at start:\n{self.child.log()[-3000:]}")
            try:
                async with Connection(self.url) as conn:
                    response = await conn.request("GET", "/readyz")
                if response.status == 200:
                    # granian starts its workers one by one: wait until all of them are up
                    if len(self.serving_pids()) >= self.processes:
                        return
            except (OSError, asyncio.IncompleteReadError, ConnectionError):
                pass
            await asyncio.sleep(0.1)
        raise RuntimeError(f"{self.child.name} did not become ready:\n{self.child.log()[-3000:]}")


class Stack:
    """Everything one bench run starts, in `workdir` (logs, Redis data, the models file)."""

    def __init__(
        self, workdir: Path, models_toml: str, upstream_url: str, remote_upstream_port: int, back_port: int
    ) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.models_path = workdir / "models.toml"
        self.models_path.write_text(models_toml)
        self.upstream_url = upstream_url
        #: the upstream process of scenario 8: its port is in models.toml before it runs (started on demand)
        self.remote_upstream_port = remote_upstream_port
        self.remote_upstream_url = f"http://127.0.0.1:{remote_upstream_port}/v1/chat/completions"
        self.remote_interactions_url = f"http://127.0.0.1:{remote_upstream_port}/v1beta/interactions"
        #: the back of scenario 19 (a second server, the front's Google): in models.toml before it runs too
        self.back_port = back_port
        # persistence off: an AOF rewrite in the middle of a measurement is noise; both paths share this Redis
        self.redis = RedisProcess(workdir / "redis", port=free_port(), appendonly=False)
        self.children: list[Child] = []

    @property
    def redis_url(self) -> str:
        return self.redis.url

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            k: v for k, v in os.environ.items() if k not in _OURS and not k.startswith(("GEMINI_", "GOOGLE_"))
        }
        env.update(REDIS_URL=self.redis_url, IX_MODELS=str(self.models_path), PYTHONUNBUFFERED="1")
        env[BACK_KEY_ENV] = BACK_KEY
        env.update(extra)
        return env

    def _child(self, name: str, args: list[str], env: dict[str, str]) -> Child:
        child = Child(name, args, env, self.workdir / f"{name}.log").start()
        self.children.append(child)
        return child

    def start_redis(self) -> None:
        self.redis.start()

    async def start_server(self, name: str, processes: int, **extra: str) -> WebServer:
        """The production server as `make run` starts it, with REDIS_URL, EMBEDDED_WORKER=0, `extra` set (on
        a free port unless `extra` names its PORT)."""
        port = int(extra.pop("PORT", 0)) or free_port()
        env = self.env(PORT=str(port), WEB_PROCESSES=str(processes), EMBEDDED_WORKER="0", **extra)
        server = WebServer(self._child(name, [sys.executable, "-m", "server"], env), port, processes)
        await server.wait_ready()
        return server

    async def start_baseline(self, name: str, processes: int) -> WebServer:
        port = free_port()
        env = self.env(
            PORT=str(port),
            WEB_PROCESSES=str(processes),
            BENCH_UPSTREAM_URL=self.upstream_url,
            BENCH_REMOTE_UPSTREAM_URL=self.remote_upstream_url,
            BENCH_REMOTE_INTERACTIONS_URL=self.remote_interactions_url,
        )
        server = WebServer(
            self._child(name, [sys.executable, "-m", "bench.baseline_app"], env), port, processes
        )
        await server.wait_ready()
        return server

    async def start_worker(self, name: str, within: float = 30.0) -> Child:
        return (await self.start_workers([name], within))[0]

    async def start_workers(self, names: list[str], within: float = 60.0) -> list[Child]:
        """Worker processes started all at once, each ready ("worker ready": it consumes the queue)."""
        children = [self._child(name, [sys.executable, "-m", "workers"], self.env()) for name in names]
        await asyncio.gather(*(child.wait_for_line("worker ready", within) for child in children))
        return children

    async def start_upstream(self, name: str = "upstream", **extra: str) -> Child:
        """The fake upstream of scenario 6 or 8 on its port (bench/upstream_server.py), `extra` in its env."""
        env = self.env(PORT=str(self.remote_upstream_port), **extra)
        child = self._child(name, [sys.executable, "-m", "bench.upstream_server"], env)
        await child.wait_for_line("upstream ready", 30.0)
        return child

    def stop_children(self, children: list[Child]) -> None:
        """Stop these, all signalled first so that they shut down side by side, and forget them."""
        for child in children:
            child.terminate()
        for child in children:
            child.stop()
            self.children.remove(child)

    def redis_pids(self) -> list[int]:
        process = self.redis.process
        return [process.pid] if process is not None and process.poll() is None else []

    def stop(self) -> None:
        for child in reversed(self.children):
            child.stop()
        self.children.clear()
        self.redis.stop()
