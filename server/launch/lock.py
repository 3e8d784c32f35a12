"""The server lock of a data directory: one `python -m server` at a time owns a private Redis's data.

A second server on the same data would start a second redis-server on the same socket and the same
append-only files. The lock is an flock(2) on `<data_dir>/server.lock`, so it is released by the kernel
however its holder ends (a SIGKILL included); the file also says who holds it, for the refusal message
and for `python -m workers`, which finds the running server's Redis there.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import IO

import msgspec

LOCK_NAME = "server.lock"


class Holder(msgspec.Struct, kw_only=True):
    pid: int
    http: str
    redis_url: str = ""


class LockHeld(RuntimeError):
    def __init__(self, path: Path, holder: Holder | None) -> None:
        self.holder = holder
        who = f"pid {holder.pid}, {holder.http}" if holder else "its holder did not say who it is"
        super().__init__(f"a server is already running on the data in {path.parent} ({who}); stop it first")


class ServerLock:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / LOCK_NAME
        self._file: IO[bytes] | None = None

    def acquire(self, holder: Holder) -> None:
        """Take the lock, or raise LockHeld naming the server that has it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        file = self.path.open("a+b")
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.close()
            raise LockHeld(self.path, read_holder(self.path)) from None
        self._file = file
        self.update(holder)

    def update(self, holder: Holder) -> None:
        assert self._file is not None
        self._file.seek(0)
        self._file.truncate()
        self._file.write(msgspec.json.encode(holder))
        self._file.flush()

    def release(self) -> None:
        if self._file is None:
            return
        with contextlib.suppress(OSError):
            self._file.truncate(0)
        self._file.close()
        self._file = None


def read_holder(path: Path) -> Holder | None:
    with contextlib.suppress(OSError, msgspec.DecodeError):
        return msgspec.json.decode(path.read_bytes(), type=Holder)
    return None


def running(data_dir: Path) -> Holder | None:
    """The server that holds the lock of `data_dir` now, or None when no server runs on it."""
    path = data_dir / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return read_holder(path)
    finally:
        os.close(fd)  # closing drops a lock taken just now
    return None
