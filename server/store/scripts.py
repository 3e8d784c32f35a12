"""The Lua scripts in scripts/*.lua, registered once per Redis client (EVALSHA, with EVAL fallback).

Files whose names start with `_` are helpers, prepended to the scripts that use them: `_moves.lua` reads
the lifecycle table's moves a script is given, `_walk.lua` follows a chain.
"""

from __future__ import annotations

from importlib import resources

from redis.asyncio import Redis
from redis.commands.core import AsyncScript

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
        self.create: AsyncScript = redis.register_script(source("create"))
        self.claim: AsyncScript = redis.register_script(source("claim"))
        self.append: AsyncScript = redis.register_script(source("append"))
        self.finish: AsyncScript = redis.register_script(source("finish"))
        self.cancel: AsyncScript = redis.register_script(source("cancel"))
        self.reap: AsyncScript = redis.register_script(source("reap"))
        self.requeue: AsyncScript = redis.register_script(source("requeue"))
        self.set_input: AsyncScript = redis.register_script(source("set_input"))
        self.wake: AsyncScript = redis.register_script(source("wake"))
        self.take: AsyncScript = redis.register_script(source("take"))
