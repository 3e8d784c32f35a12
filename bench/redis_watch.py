"""Who sends Redis what, over a window: Redis's MONITOR feed attributed to processes, beside INFO
commandstats (scenario 9, the cost of idle workers).

INFO commandstats counts every command Redis ran, including the commands that Lua scripts issue, and for all
clients together. To say what each process costs, the MONITOR feed is read over the same window: a line names
the client's address (`[0 127.0.0.1:PORT]`), or `[0 lua]` for a command issued by a script, which Redis
feeds right after the EVAL/EVALSHA that runs it (a script runs alone, so its lines are contiguous) and which
is charged to that client. A client's port is mapped to its process through /proc: the socket inodes among
the process's file descriptors, looked up in /proc/net/tcp. The bench's own MONITOR and INFO connections
belong to no watched process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from redis.asyncio import Redis

#: what the bench itself sends to read the figures: not part of what is measured
BENCH_COMMANDS = frozenset({"info", "config|resetstat", "config|set", "monitor"})


def redis_ports(pids: list[int], redis_port: int) -> dict[int, int]:
    """{local port: pid} of the TCP connections that these processes hold to Redis on `redis_port`."""
    owner: dict[str, int] = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if link.startswith("socket:["):
                        owner[link[8:-1]] = pid
    ports: dict[int, int] = {}
    # the table is the network namespace's, so any process's view of it will do
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, inode = fields[1], fields[2], fields[9]
        if inode in owner and int(remote.rsplit(":", 1)[1], 16) == redis_port:
            ports[int(local.rsplit(":", 1)[1], 16)] = owner[inode]
    return ports


@dataclass
class Feed:
    """The MONITOR lines of a window, counted by client port: its own commands and its scripts' commands."""

    direct: Counter[int] = field(default_factory=Counter)
    scripted: Counter[int] = field(default_factory=Counter)
    #: command names by client port (scripts' commands under "lua:<name>")
    names: dict[int, Counter[str]] = field(default_factory=dict)
    _last_port: int = 0

    def feed(self, line: bytes) -> None:
        # b'+1796070685.362189 [0 127.0.0.1:54590] "evalsha" "…" "0"'
        head, _, rest = line.partition(b"] ")
        address = head.rsplit(b" ", 1)[-1]
        name = rest.split(b'"', 2)[1].decode(errors="replace").lower() if rest.count(b'"') >= 2 else "?"
        if address == b"lua":
            port = self._last_port
            self.scripted[port] += 1
            name = "lua:" + name
        else:
            port = int(address.rsplit(b":", 1)[-1]) if b":" in address else 0
            self._last_port = port
            self.direct[port] += 1
        self.names.setdefault(port, Counter())[name] += 1


class Monitor:
    """Redis's MONITOR feed, counted into a `Feed` while in the `async with` (a connection of its own)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.feed = Feed()
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Monitor:
        reader, self._writer = await asyncio.open_connection(self.host, self.port)
        self._writer.write(b"MONITOR\r\n")
        if not (await reader.readline()).startswith(b"+OK"):
            raise RuntimeError("Redis refused MONITOR")
        self._reader_task = asyncio.create_task(self._read(reader))
        return self

    async def _read(self, reader: asyncio.StreamReader) -> None:
        while line := await reader.readline():
            self.feed.feed(line.rstrip(b"\r\n"))

    async def __aexit__(self, *exc_info: object) -> None:
        if self._reader_task is not None:
            # what Redis fed before the window closed is read before counting stops
            await asyncio.sleep(0.05)
            self._reader_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader_task
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()


async def command_calls(redis: Redis) -> Counter[str]:
    """INFO commandstats as {command: calls} (subcommands as "config|resetstat"), the bench's own left out."""
    stats = await redis.info("commandstats")
    calls: Counter[str] = Counter()
    for key, value in stats.items():
        name = str(key).removeprefix("cmdstat_")
        if name not in BENCH_COMMANDS:
            calls[name] = int(value["calls"])
    return calls


#: INFO stats counters whose deltas say what a window cost Redis (scenarios 19 and 20). A read is one
#: `read()` of a client's socket (`total_reads_processed`): a client that waits for its answers before it
#: writes again makes one per round trip, as long as what it writes fits Redis's 16 KB read buffer
STATS = (
    "total_commands_processed",
    "total_reads_processed",
    "total_writes_processed",
    "total_net_input_bytes",
    "total_net_output_bytes",
)


@dataclass(frozen=True)
class Counters:
    """Redis's counters at one moment, or between two (`after - before`): INFO stats' and commandstats'."""

    stats: dict[str, int]
    calls: Counter[str]

    def __sub__(self, other: Counters) -> Counters:
        stats = {name: value - other.stats.get(name, 0) for name, value in self.stats.items()}
        calls = Counter({name: n - other.calls.get(name, 0) for name, n in self.calls.items()})
        return Counters(stats, +calls)

    @property
    def commands(self) -> int:
        """Every command Redis ran, scripts' commands included (commandstats; the bench's own left out)."""
        return sum(self.calls.values())


async def counters(redis: Redis) -> Counters:
    """INFO stats and commandstats now. Both readings cost Redis two commands and two reads, the same in
    every window, so that they cancel out between a window and its idle twin."""
    info = await redis.info("stats")
    return Counters({name: int(info[name]) for name in STATS}, await command_calls(redis))
