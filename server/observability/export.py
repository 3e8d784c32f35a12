"""Where the metrics of metrics.py are read: the multiprocess directory, the scrape, the listeners.

Several web processes (granian) and workers each write their own values. The launcher gives them one
directory in PROMETHEUS_MULTIPROC_DIR before it starts any (`prepare_directory`), each process writes its
files there (prometheus-client's multiprocess mode), and a scrape adds them up (`MultiProcessCollector`).
Without that variable a process has only its own values, and a scrape shows those. Either way a process's
values reach prometheus-client when its buffers are flushed (buffer.py): a scrape flushes the answering
process's first (`before_scrape`), the others' are as of their last flush, at most a second old.

prometheus-client picks its mode when it is imported, from that variable: this module imports it only
inside functions, so the launcher can import this module, then set the variable, then start the others.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ENV = "PROMETHEUS_MULTIPROC_DIR"
#: what a process exposing the multiprocess files under `/metrics` answers with
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_LIVE_FILE = re.compile(r"gauge_live[a-z]*_([0-9]+)\.db")
#: every file of a process ends with its pid (counter_123.db, gauge_livesum_123.db)
_FILE_PID = re.compile(r"_([0-9]+)\.db$")
#: what this process runs before it answers a scrape (metrics.start: its buffers' flush); the launcher,
#: which records nothing, has none
_before_scrape: Callable[[], None] | None = None


def prepare_directory(data_dir: Path | None) -> tuple[Path, bool]:
    """Make the launcher's directory and name it in PROMETHEUS_MULTIPROC_DIR: the operator's own (that
    variable, set), else `metrics/` under the data dir, else a new temporary one. The files of processes
    no longer running are deleted first: an earlier run's counts must not count again, while a worker
    that shares the directory and runs on keeps its own. Returns it, and whether it is temporary."""
    named = os.environ.get(ENV)
    if named:
        path, temporary = Path(named), False
    elif data_dir is not None:
        path, temporary = data_dir / "metrics", False
    else:
        path, temporary = Path(tempfile.mkdtemp(prefix="ix-metrics-")), True
    path.mkdir(parents=True, exist_ok=True)
    for file in path.glob("*.db"):
        pid = _FILE_PID.search(file.name)
        if pid is None or not _alive(int(pid.group(1))):
            file.unlink(missing_ok=True)
    os.environ[ENV] = str(path)
    return path, temporary


def before_scrape(flush: Callable[[], None]) -> None:
    global _before_scrape
    _before_scrape = flush


def _flush() -> None:
    if _before_scrape is not None:
        _before_scrape()


def multiprocess() -> bool:
    return bool(os.environ.get(ENV))


def check_mode() -> None:
    """Refuse a process whose prometheus-client was imported before the variable was set: it would keep
    its values in memory, where no scrape of the directory sees them."""
    from prometheus_client import values

    if multiprocess() and values.ValueClass is values.MutexValue:
        raise RuntimeError(f"prometheus_client was imported before {ENV} was set")


def process_exit() -> None:
    """This process is ending: its in-flight and active gauges stop counting (its counters stay)."""
    if multiprocess():
        from prometheus_client import multiprocess as mp

        with contextlib.suppress(OSError):
            mp.mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]  # untyped upstream


def sweep_dead() -> None:
    """The live gauges of processes that died without `process_exit` (killed, crashed) stop counting."""
    directory = os.environ.get(ENV)
    if not directory:
        return
    from prometheus_client import multiprocess as mp

    for pid in {int(m.group(1)) for name in os.listdir(directory) if (m := _LIVE_FILE.fullmatch(name))}:
        if not _alive(pid):
            with contextlib.suppress(OSError):
                mp.mark_process_dead(pid, directory)  # type: ignore[no-untyped-call]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class QueueDepth:
    """`ix_queue_depth`, read when scraped: `read` answers the arq queue's length (None: Redis failed)."""

    def __init__(self, read: Callable[[], int | None]) -> None:
        self.read = read

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        depth = self.read()
        if depth is not None:
            yield GaugeMetricFamily("ix_queue_depth", "Background jobs waiting in the queue", value=depth)


def registry(depth: QueueDepth | None) -> Any:
    """What a scrape reads: every process's files (multiprocess), or this process's own values."""
    from prometheus_client import REGISTRY, CollectorRegistry

    found = CollectorRegistry()
    found.register(_Processes() if multiprocess() else _Own(REGISTRY))
    if depth is not None:
        found.register(depth)
    return found


class _Processes:
    """Every process's files, the dead ones' live gauges dropped first."""

    def __init__(self) -> None:
        from prometheus_client.multiprocess import MultiProcessCollector

        self.inner = MultiProcessCollector(None)  # type: ignore[no-untyped-call]

    def collect(self) -> Iterator[Any]:
        _flush()
        sweep_dead()
        yield from self.inner.collect()  # type: ignore[no-untyped-call]


class _Own:
    """The process-wide registry, read through: the queue's collector is added to a registry of the
    scrape's own, not to the process-wide one."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def collect(self) -> Iterator[Any]:
        _flush()
        yield from self.inner.collect()


def render(found: Any) -> bytes:
    from prometheus_client import generate_latest

    data: bytes = generate_latest(found)
    return data


def serve(port: int, host: str, found: Any) -> Any:
    """A listener of its own for the scrape, in a thread (prometheus-client's); returns its server."""
    from prometheus_client import start_http_server

    server, _thread = start_http_server(port, addr=host, registry=found)
    return server


def remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
