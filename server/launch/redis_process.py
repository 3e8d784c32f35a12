"""A private redis-server child process: the embedded default of `make run`, and the tests' Redis.

It is started from the `redis-server` binary on PATH with its data in a directory of ours (AOF
persistence, so a restart keeps the interactions), and stopped with its owner, also when the owner is
killed (orphans.preexec_die_with_parent).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

from .orphans import preexec_die_with_parent

#: sun_path of a unix socket holds 108 bytes, the terminating NUL included
_MAX_SOCKET_PATH = 107


class RedisStartError(RuntimeError):
    pass


class RedisProcess:
    def __init__(
        self,
        data_dir: Path,
        *,
        port: int | None = None,
        appendonly: bool = True,
        appendfsync: str = "everysec",
    ) -> None:
        """With `port`, listen on 127.0.0.1:port; otherwise only on a unix socket in `data_dir`."""
        self.data_dir = data_dir.resolve()
        self.port = port
        self.appendonly = appendonly
        self.appendfsync = appendfsync
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def socket_path(self) -> Path:
        return self.data_dir / "redis.sock"

    @property
    def url(self) -> str:
        if self.port is not None:
            return f"redis://127.0.0.1:{self.port}/0"
        return f"unix://{self.socket_path}"

    def start(self, timeout: float = 10.0) -> RedisProcess:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RedisStartError("redis-server was not found on PATH (Debian: apt-get install redis-server)")
        if self.port is None and len(str(self.socket_path).encode()) > _MAX_SOCKET_PATH:
            raise RedisStartError(
                f"the Redis socket path {self.socket_path} is longer than a unix socket allows "
                f"({_MAX_SOCKET_PATH} bytes): set IX_DATA_DIR to a shorter directory"
            )
        self.data_dir.mkdir(parents=True, exist_ok=True)
        args = [
            binary,
            "--dir", str(self.data_dir),
            "--save", "",
            "--appendonly", "yes" if self.appendonly else "no",
            "--appendfsync", self.appendfsync,
            "--logfile", str(self.data_dir / "redis.log"),
            "--daemonize", "no",
        ]  # fmt: skip
        if self.port is not None:
            args += ["--port", str(self.port), "--bind", "127.0.0.1"]
        else:
            args += ["--port", "0", "--unixsocket", str(self.socket_path), "--unixsocketperm", "700"]
        self.process = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=preexec_die_with_parent,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RedisStartError(f"redis-server exited at start; see {self.data_dir / 'redis.log'}")
            if self._answers():
                return self
            time.sleep(0.02)
        self.stop()
        raise RedisStartError(
            f"redis-server did not answer within {timeout:g} s; see {self.data_dir / 'redis.log'}"
        )

    def _answers(self) -> bool:
        try:
            if self.port is not None:
                conn = socket.create_connection(("127.0.0.1", self.port), timeout=0.2)
            else:
                conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    conn.settimeout(0.2)
                    conn.connect(str(self.socket_path))
                except OSError:
                    conn.close()  # a socket that never connected is still a descriptor
                    raise
        except OSError:
            return False
        with conn:
            try:
                conn.sendall(b"PING\r\n")
                return conn.recv(16).startswith(b"+PONG")
            except OSError:
                return False

    def stop(self, *, kill: bool = False) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        if kill:
            self.process.kill()
        else:
            self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
