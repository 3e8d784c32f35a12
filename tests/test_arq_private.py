"""What the server takes from arq, pinned: it fails, saying what to review, when arq's version moves from the
pinned one or any name the server uses of it is gone or has changed (a signature, a value).

arq is the queue's format here, not its worker (server/worker_host.py says why): its job blob
(`serialize_job`, `deserialize_job_raw`), its key layout (`arq.constants`, which keys.py and the Lua scripts
build on), its client class (`ArqRedis`). Those names carry no underscore, but arq documents neither its
constants nor its raw (de)serializers, so an upgrade may change them without a word: each is listed here
with the signature or value read (`inspect`) from the pinned version. The server's imports of arq are read
from its source, so a new use of arq fails here until it is listed too. No Redis."""

from __future__ import annotations

import ast
import importlib
import inspect
import tomllib
from pathlib import Path

import arq
from arq.jobs import deserialize_job_raw, serialize_job

from server.store.jobs import job_deserializer, job_serializer

ROOT = Path(__file__).resolve().parent.parent
PINNED = "0.28.0"
REVIEW = (
    "review what the server assumes of it (server/store/jobs.py, keys.py, queue_side.py, connection.py, "
    "store.py, runner/job_loop.py and the Lua scripts that take arq's keys: wake, take, due), then update "
    "this module"
)

#: every name of arq the server imports, as the pinned version has it: a signature, or a value
USED: dict[tuple[str, str], str] = {
    ("arq.jobs", "serialize_job"): (
        "(function_name: str, args: tuple[typing.Any, ...], kwargs: dict[str, typing.Any], "
        "job_try: Optional[int], enqueue_time_ms: int, *, "
        "serializer: Optional[Callable[[dict[str, Any]], bytes]] = None) -> bytes"
    ),
    ("arq.jobs", "deserialize_job_raw"): (
        "(r: bytes, *, deserializer: Optional[Callable[[bytes], dict[str, Any]]] = None) "
        "-> tuple[str, tuple[typing.Any, ...], dict[str, typing.Any], int, int]"
    ),
    ("arq.jobs", "DeserializationError"): "DeserializationError(SerializationError(RuntimeError))",
    ("arq.connections", "ArqRedis"): (
        "(self, pool_or_conn: Optional[redis.asyncio.connection.ConnectionPool] = None, "
        "job_serializer: Optional[Callable[[dict[str, Any]], bytes]] = None, "
        "job_deserializer: Optional[Callable[[bytes], dict[str, Any]]] = None, "
        "default_queue_name: str = 'arq:queue', expires_extra_ms: int = 86400000, **kwargs: Any) -> None"
    ),
    ("arq.constants", "job_key_prefix"): "'arq:job:'",
    ("arq.constants", "in_progress_key_prefix"): "'arq:in-progress:'",
    ("arq.constants", "result_key_prefix"): "'arq:result:'",
    ("arq.constants", "retry_key_prefix"): "'arq:retry:'",
    ("arq.constants", "expires_extra_ms"): "86400000",
}


def described(module: str, name: str) -> str:
    value = getattr(importlib.import_module(module), name)
    if inspect.isclass(value) and issubclass(value, BaseException):
        bases = [each.__name__ for each in value.__mro__[: value.__mro__.index(Exception)]]
        return bases[0] + "".join(f"({base}" for base in bases[1:]) + ")" * (len(bases) - 1)
    if inspect.isclass(value):
        return str(inspect.signature(value.__init__))
    if callable(value):
        return str(inspect.signature(value))
    return repr(value)


def imported_from_arq() -> set[tuple[str, str]]:
    """(module, name) of every `from arq... import name` in server/ and workers/."""
    found: set[tuple[str, str]] = set()
    for path in [*(ROOT / "server").rglob("*.py"), *(ROOT / "workers").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                assert not any(alias.name.split(".")[0] == "arq" for alias in node.names), (
                    f"{path}: import arq names from their modules, so that this test sees them"
                )
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "arq":
                found |= {(node.module or "", alias.name) for alias in node.names}
    return found


def test_arq_is_the_pinned_version() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert f"arq=={PINNED}" in pyproject["project"]["dependencies"], (
        f"pyproject.toml no longer pins arq: {REVIEW}"
    )
    assert arq.VERSION == PINNED, f"arq is {arq.VERSION}, not {PINNED}: {REVIEW}"


def test_every_name_used_is_as_the_pinned_version_has_it() -> None:
    changed = {
        f"{module}.{name}": (expected, described(module, name))
        for (module, name), expected in USED.items()
        if described(module, name) != expected
    }
    assert not changed, f"arq changed what the server uses (expected, now): {changed}; {REVIEW}"


def test_every_name_the_server_imports_is_listed() -> None:
    unlisted = imported_from_arq() - set(USED)
    assert not unlisted, f"the server uses more of arq than this module pins: {sorted(unlisted)}"
    unused = set(USED) - imported_from_arq()
    assert not unused, f"listed here, used no longer: {sorted(unused)}"


def test_a_job_blob_reads_back_as_it_was_written() -> None:
    """What the workers read of a job (runner/job_loop.py) is what the web processes wrote (msgpack gives
    the arguments back as a list)."""
    blob = serialize_job("fire_trigger", ("t", "tr_x", 1000), {"a": 1}, None, 1234, serializer=job_serializer)
    name, args, kwargs, _tries, enqueued_ms = deserialize_job_raw(blob, deserializer=job_deserializer)
    assert (name, list(args), kwargs, enqueued_ms) == ("fire_trigger", ["t", "tr_x", 1000], {"a": 1}, 1234)
