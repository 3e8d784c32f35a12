"""A pipelined Redis client for the request path's scripts: a few connections, no pool to check out from.

Every stored create ends in one EVALSHA, and redis-py spent about four times Redis's own work on it: a
checked-out connection (a Condition), a health check per checkout, a retry wrapper and an `asyncio.timeout`
per command. Here a command is a RESP frame appended to a connection's output and a future in its FIFO of
replies: Redis answers a connection's commands in order, so the n-th reply is the n-th future's. What is
written during one turn of the loop leaves in one write; hiredis parses the replies.

Failure, as in the commands client it sits beside (connection.py): a command gets its reply within `bound`
seconds of being sent, or fails with TimeoutError at its own bound, never earlier (its reply, if it comes,
is read and dropped, so the replies stay in order); a connection whose waiting commands are all past their
bounds is closed; a lost connection fails its waiting commands with ConnectionError, and the next command
opens a new one. A command is never sent twice: Lua scripts are not
all idempotent. Redis's error replies become the exceptions redis-py's client raises for them (a
`LOADING` Redis is a ConnectionError, an outage, not a bug; CLUSTERDOWN as its Cluster client reads it:
state_errors.py), so callers see one family.

Plain TCP and unix sockets only: a `rediss://` URL keeps redis-py's client for scripts too (see
`Scripts`), whose TLS options this module does not repeat.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import hashlib
from collections.abc import Sequence
from typing import Any, cast

import hiredis
from redis.asyncio.connection import parse_url
from redis.exceptions import NoScriptError, RedisError, ResponseError

from .state_errors import error as _error

#: connections per process: Redis runs one command at a time, so more only spread a large reply's wait
_CONNECTIONS = 4


def encode(args: Sequence[Any]) -> bytes:
    """A command as a RESP array of bulk strings (str as UTF-8, numbers in decimal, as redis-py does)."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        if isinstance(arg, bytes):
            data = arg
        elif isinstance(arg, str):
            data = arg.encode()
        elif isinstance(arg, (int, float)) and not isinstance(arg, bool):
            data = repr(arg).encode()
        else:
            raise TypeError(f"cannot send {type(arg).__name__} to Redis")
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


class _Connection(asyncio.Protocol):
    """One socket: commands written in order, their futures answered in order."""

    def __init__(self, bound: float) -> None:
        self.bound = bound
        self.loop = asyncio.get_running_loop()
        self.reader = hiredis.Reader(replyError=ResponseError)
        self.transport: asyncio.Transport | None = None
        #: (future, deadline) of every command sent and not answered yet, oldest first
        self.waiting: collections.deque[tuple[asyncio.Future[Any], float]] = collections.deque()
        self.out: list[bytes] = []
        self.flush_due = False
        self.timer: asyncio.TimerHandle | None = None
        self.lost: BaseException | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but have its methods
        self.transport = cast(asyncio.Transport, transport)

    def send(self, frame: bytes) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = self.loop.create_future()
        self.waiting.append((future, self.loop.time() + self.bound))
        self.out.append(frame)
        if not self.flush_due:
            # what else is sent during this turn of the loop leaves with it
            self.flush_due = True
            self.loop.call_soon(self._flush)
        if self.timer is None:
            self.timer = self.loop.call_at(self.waiting[0][1], self._check)
        return future

    def _flush(self) -> None:
        self.flush_due = False
        # a connection lost since has failed these commands already (and its transport refuses writes)
        if self.transport is not None and self.out and self.lost is None:
            self.transport.write(b"".join(self.out))
        self.out.clear()

    def _check(self) -> None:
        """Each command past its bound fails, and only those: a younger one on the same connection may still
        be run in time (its script's deadline is its own), and its caller must hear how it went. Their
        replies are still read, in order, and dropped. Once every command waiting here is past its bound,
        the connection is closed (a stuck or gone Redis): nothing it holds can be applied any more."""
        self.timer = None
        now = self.loop.time()
        pending: float | None = None
        for future, deadline in self.waiting:
            if deadline > now:
                pending = deadline
                break
            if not future.done():
                future.set_exception(TimeoutError(f"Redis did not answer within {self.bound:g} s"))
        if pending is None:
            if self.waiting:
                self._fail(TimeoutError(f"Redis did not answer within {self.bound:g} s"))
            return
        self.timer = self.loop.call_at(pending, self._check)

    def data_received(self, data: bytes) -> None:
        reader = self.reader
        reader.feed(data)
        waiting = self.waiting
        while True:
            reply = reader.gets()
            if reply is False:
                return
            if not waiting:
                self._fail(ConnectionError("Redis sent a reply nobody asked for"))
                return
            future, _deadline = waiting.popleft()
            if future.done():  # its caller was cancelled: the reply is read and dropped
                continue
            if isinstance(reply, ResponseError):
                # redis-py's own reading of an error reply: LOADING (a restarting Redis) or a refused
                # password is a ConnectionError, an outage (a 503), as with its client; CLUSTERDOWN,
                # MASTERDOWN, TRYAGAIN and READONLY outages too (state_errors.py); NOSCRIPT a
                # NoScriptError; the rest ResponseError
                future.set_exception(_error(reply.args[0]))
            else:
                future.set_result(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(exc or ConnectionError("Redis closed the connection"))

    def _fail(self, exc: BaseException) -> None:
        if self.lost is None:
            self.lost = exc
        if self.transport is not None:
            self.transport.abort()
        while self.waiting:
            future, _deadline = self.waiting.popleft()
            if not future.done():
                error = exc if isinstance(exc, (TimeoutError, ConnectionError)) else ConnectionError(exc)
                future.set_exception(error)
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def close(self) -> None:
        self._fail(ConnectionError("client closed"))


class DirectRedis:
    """Commands over a few pipelined connections to the Redis of `url` (redis:// or unix://)."""

    def __init__(self, url: str, *, bound: float, connect_timeout: float) -> None:
        options = parse_url(url)
        self.path: str | None = options.get("path")
        self.host: str = options.get("host", "localhost")
        self.port: int = int(options.get("port", 6379))
        self.bound = bound
        self.connect_timeout = connect_timeout
        #: what a new connection sends before anything else (AUTH, SELECT)
        self.hello: list[list[Any]] = []
        password, username = options.get("password"), options.get("username")
        if password is not None:
            self.hello.append(["AUTH", username, password] if username else ["AUTH", password])
        if int(options.get("db", 0)):
            self.hello.append(["SELECT", int(options["db"])])
        self.connections: list[_Connection | None] = [None] * _CONNECTIONS
        self.opening: list[asyncio.Task[_Connection] | None] = [None] * _CONNECTIONS

    @staticmethod
    def supports(url: str) -> bool:
        return url.startswith(("redis://", "unix://"))

    async def execute(self, *args: Any) -> Any:
        """One command's reply; redis-py's exception for an error reply, TimeoutError or ConnectionError
        when Redis did not answer."""
        return await (await self._connection()).send(encode(args))

    async def evalsha(self, sha: str, script: bytes, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        """EVALSHA, loading the script first when Redis does not know it (a restart, SCRIPT FLUSH)."""
        command = ["EVALSHA", sha, len(keys), *keys, *args]
        try:
            return await self.execute(*command)
        except NoScriptError:
            pass
        await self.execute("SCRIPT", "LOAD", script)
        return await self.execute(*command)

    async def _connection(self) -> _Connection:
        """An open connection with nothing waiting, else a new one while there is room, else the open
        one with the fewest commands waiting."""
        best: _Connection | None = None
        free: int | None = None
        for index, conn in enumerate(self.connections):
            if conn is None or conn.lost is not None:
                free = index if free is None else free
            elif best is None or len(conn.waiting) < len(best.waiting):
                best = conn
        if best is not None and (free is None or not best.waiting):
            return best
        assert free is not None
        task = self.opening[free]
        if task is None:
            task = self.opening[free] = asyncio.ensure_future(self._open())
            task.add_done_callback(functools.partial(self._opened, free))
        return await asyncio.shield(task)

    def _opened(self, index: int, task: asyncio.Task[_Connection]) -> None:
        self.opening[index] = None
        if not task.cancelled() and task.exception() is None:
            self.connections[index] = task.result()

    async def _open(self) -> _Connection:
        loop = asyncio.get_running_loop()
        where = self.path or f"{self.host}:{self.port}"
        try:
            async with asyncio.timeout(self.connect_timeout):
                if self.path is not None:
                    _t, conn = await loop.create_unix_connection(lambda: _Connection(self.bound), self.path)
                else:
                    _t, conn = await loop.create_connection(
                        lambda: _Connection(self.bound), self.host, self.port
                    )
                try:
                    for command in self.hello:
                        await conn.send(encode(command))
                except BaseException:
                    conn.close()  # refused (a wrong password) or cut off: never half set up
                    raise
        except TimeoutError:
            raise TimeoutError(f"Redis at {where}: no connection within {self.connect_timeout:g} s") from None
        except (ConnectionError, RedisError):
            raise
        except OSError as exc:
            # a unix socket that is not there (yet) is an outage like a refused port, not a bug
            raise ConnectionError(f"Redis at {where}: {exc}") from exc
        return conn

    async def aclose(self) -> None:
        for task in self.opening:
            if task is not None:
                task.cancel()
        for conn in self.connections:
            if conn is not None:
                conn.close()
        self.connections = [None] * _CONNECTIONS


def sha1(script: bytes) -> str:
    return hashlib.sha1(script).hexdigest()
