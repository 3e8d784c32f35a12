"""The Lua scripts in scripts/*.lua, registered once per Redis client (EVALSHA, with EVAL fallback).

Files whose names start with `_` are helpers, prepended to the scripts that use them: `_moves.lua` reads
the lifecycle table's moves a script is given, `_walk.lua` follows a chain.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from redis.asyncio import Redis
from redis.commands.core import AsyncScript

from ..observability import spans

#: the helpers each script starts with
_PRELUDES: dict[str, tuple[str, ...]] = {
    "create": ("_moves", "_walk"),
    "claim": ("_moves",),
    "append": ("_moves",),
    "finish": ("_moves",),
    "cancel": ("_moves",),
    "requeue": ("_moves",),
    "reap": (),
    "set_input": (),
    "wake": (),
    "take": (),
}


def _read(name: str) -> str:
    return resources.files(__package__).joinpath("scripts", f"{name}.lua").read_text()


def source(name: str) -> str:
    return "\n".join([*(_read(helper) for helper in _PRELUDES[name]), _read(name)])


class _TracedScript(AsyncScript):
    """A script whose every call is a span of the trace it is made in (made only when tracing is on: a
    plain AsyncScript costs nothing more)."""

    def __init__(self, redis: Redis, name: str) -> None:
        super().__init__(redis, source(name))
        self.name = name

    async def __call__(self, keys: Any = None, args: Any = None, client: Any = None) -> Any:
        with spans.script(self.name):
            return await super().__call__(keys, args, client)


class Scripts:
    __slots__ = (
        "append",
        "cancel",
        "claim",
        "create",
        "finish",
        "reap",
        "requeue",
        "set_input",
        "take",
        "wake",
    )

    def __init__(self, redis: Redis) -> None:
        traced = spans.on()

        def register(name: str) -> AsyncScript:
            return _TracedScript(redis, name) if traced else redis.register_script(source(name))

        self.create = register("create")
        self.claim = register("claim")
        self.append = register("append")
        self.finish = register("finish")
        self.cancel = register("cancel")
        self.reap = register("reap")
        self.requeue = register("requeue")
        self.set_input = register("set_input")
        self.wake = register("wake")
        self.take = register("take")
