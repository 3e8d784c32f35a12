"""Children that end with their parent: a SIGKILL of the server must not leave a redis-server or a web
process behind, still holding the data or answering on the port.

On Linux the kernel does it (PR_SET_PDEATHSIG, sent when the thread that forked the child ends: the server
forks its children from its main thread, which lives as long as the process). Elsewhere a thread polls.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time

_PR_SET_PDEATHSIG = 1
#: set by `python -m server` for its web processes: the pid they must outlive no longer than
PARENT_ENV = "IX_SERVER_PID"


def _set_pdeathsig(sig: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0) == 0)
    return False


def preexec_die_with_parent() -> None:
    """For subprocess.Popen(preexec_fn=…): the child gets SIGTERM when its parent dies."""
    _set_pdeathsig(signal.SIGTERM)


def die_with_parent(parent: int) -> None:
    """Ask for SIGTERM (a graceful stop) when `parent` is gone; if it is gone already, send it now."""
    if not _set_pdeathsig(signal.SIGTERM):
        threading.Thread(target=_poll_parent, args=(parent,), daemon=True, name="parent-watch").start()
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)


def die_with_launcher() -> None:
    """In a web process started by `python -m server`: end when the launcher ends."""
    parent = os.environ.get(PARENT_ENV)
    if parent and parent.isdigit():
        die_with_parent(int(parent))


def _poll_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1.0)
    os.kill(os.getpid(), signal.SIGTERM)
