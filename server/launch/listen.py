"""The HTTP port: refused up front when something else has it, and announced once it answers.

granian's web processes each bind the port with SO_REUSEPORT, so a second server on a busy port would
start silently and the kernel would split the connections between the two. A probe bound without
SO_REUSEPORT fails on any port that is taken, whoever took it (two of our servers included).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import httpx


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


def base_url(host: str, port: int) -> str:
    if host in ("0.0.0.0", ""):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def when_listening(url: str, then: Callable[[], None], timeout: float = 120.0) -> threading.Thread:
    """Call `then` (in a thread) once `url`/healthz answers: the web processes have started."""

    def wait() -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/healthz", timeout=1.0).status_code == 200:
                    then()
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)

    thread = threading.Thread(target=wait, daemon=True, name="banner")
    thread.start()
    return thread
