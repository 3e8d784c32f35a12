"""A stack's Redis taken away as an operator or a crash would: stopped and started again on the same address
and data directory (its append-only file), or frozen (SIGSTOP) and thawed; for a stack with its own Redis
and for one whose server launched it (`make run`)."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from redis import Redis as SyncRedis

from ..support import Stack
from ..waiting import until


def redis_pid(stack: Stack) -> int:
    """The process id of the redis-server the stack uses (a launched server's child included)."""
    with SyncRedis.from_url(stack.redis_url, socket_timeout=5) as client:
        info: dict[str, Any] = client.info("server")
    return int(info["process_id"])


def stop_redis(stack: Stack) -> None:
    """SIGTERM the stack's Redis (it writes its AOF and exits) and wait until it is gone."""
    if not stack.topology.launched:
        stack.redis.stop()
        return
    pid = redis_pid(stack)
    os.kill(pid, signal.SIGTERM)
    # the launching server reaps its child only when it stops: until then the process is a zombie
    until(lambda: _gone(pid), timeout=15, interval=0.02)


def start_redis(stack: Stack) -> None:
    """Start the stack's Redis again, on the address its processes know and with the same data. A launched
    server's Redis is restarted by the test (with the server's own arguments: its data directory, unix
    socket and appendfsync), as an operator would after a crash; it stops with the stack."""
    if stack.topology.launched:
        stack.redis.start()
    else:
        stack.start_redis()


@contextlib.contextmanager
def frozen(stack: Stack) -> Iterator[int]:
    """The stack's Redis stopped by SIGSTOP for the block (it accepts connections, answers nothing), thawed
    by SIGCONT after it, also when the block fails."""
    pid = redis_pid(stack)
    os.kill(pid, signal.SIGSTOP)
    try:
        yield pid
    finally:
        os.kill(pid, signal.SIGCONT)


def wait_ready(stack: Stack, timeout: float = 20.0) -> None:
    """Until every web process of the stack answers /readyz 200 again (Redis back, a worker seen)."""
    for _proc, url in stack.servers:
        until(functools.partial(_ready, url), timeout=timeout, interval=0.1)


def error_lines(stack: Stack) -> list[str]:
    """Every ERROR (or CRITICAL) line the stack's web and worker processes logged, with its traceback's
    first line."""
    logs = [proc.log_path for proc, _url in stack.servers] + [proc.log_path for proc in stack.workers]
    found: list[str] = []
    for path in logs:
        lines = _lines(path)
        for index, line in enumerate(lines):
            fields = line.split(maxsplit=2)
            if len(fields) >= 2 and fields[1] in ("ERROR", "CRITICAL"):
                found.append(" | ".join(lines[index : index + 2]))
    return found


def _lines(path: Path) -> list[str]:
    return path.read_text(errors="replace").splitlines() if path.exists() else []


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            # the state follows the parenthesised command name
            return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True
