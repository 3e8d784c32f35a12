"""The HTTP port: refused up front when something else has it, and announced once it answers.

granian's web processes each bind the port with SO_REUSEPORT, so a second server on a busy port would
start silently and the kernel would split the connections between the two. A probe bound without
SO_REUSEPORT fails on any port that is taken, whoever took it (two of our servers included).
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable

from . import orphans


class PortInUse(RuntimeError):
    pass


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def check_free(host: str, port: int) -> None:
    with socket.socket(_family(host), socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise PortInUse(
                f"cannot listen on {host}:{port} ({exc.strerror}): another program has it; "
                "stop it or set PORT"
            ) from None


def reachable(host: str) -> str:
    """The address to reach a server bound to `host` from this machine."""
    return {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)


def base_url(host: str, port: int) -> str:
    host = reachable(host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def announce_when_listening(
    host: str, port: int, text: str | Callable[[], str], timeout: float = 120.0
) -> int:
    """Print `text` once GET /healthz on host:port answers 200: the web processes have started. A callable
    is called then (a log line's time is the time it is printed), and must take no lock.

    The waiting is done by a forked child, not a thread: granian forks the web processes from this
    process, and a thread caught at that moment holding a lock (an import, a buffer) would leave the lock
    held for ever in the web process. The child forks nothing, ends with its parent, and uses only the
    socket module. Returns its pid, for the launcher to reap.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    child = os.fork()
    if child != 0:
        return child
    status = 0
    try:
        orphans.preexec_die_with_parent()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if _healthy(host, port):
                sys.stdout.write((text() if callable(text) else text) + "\n")
                sys.stdout.flush()
                break
            time.sleep(0.1)
    except BaseException:
        status = 1
    finally:
        os._exit(status)


def _healthy(host: str, port: int) -> bool:
    try:
        with socket.create_connection((reachable(host), port), timeout=1.0) as conn:
            conn.sendall(b"GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n")
            return conn.recv(64).startswith((b"HTTP/1.0 200", b"HTTP/1.1 200"))
    except OSError:
        return False
