"""The Lua scripts in scripts/*.lua, registered once per Redis client (EVALSHA, with EVAL fallback)."""

from __future__ import annotations

from pathlib import Path

from redis.asyncio import Redis
from redis.commands.core import AsyncScript

SCRIPTS_DIR = Path(__file__).resolve().parent / "scripts"
#: scripts that use the chain walk get scripts/_walk.lua prepended
_USES_WALK = frozenset({"create"})


def source(name: str) -> str:
    text = (SCRIPTS_DIR / f"{name}.lua").read_text()
    if name in _USES_WALK:
        text = (SCRIPTS_DIR / "_walk.lua").read_text() + "\n" + text
    return text


class Scripts:
    __slots__ = ("append", "cancel", "claim", "create", "finish", "reap", "requeue", "set_input")

    def __init__(self, redis: Redis) -> None:
        self.create: AsyncScript = redis.register_script(source("create"))
        self.claim: AsyncScript = redis.register_script(source("claim"))
        self.append: AsyncScript = redis.register_script(source("append"))
        self.finish: AsyncScript = redis.register_script(source("finish"))
        self.cancel: AsyncScript = redis.register_script(source("cancel"))
        self.reap: AsyncScript = redis.register_script(source("reap"))
        self.requeue: AsyncScript = redis.register_script(source("requeue"))
        self.set_input: AsyncScript = redis.register_script(source("set_input"))
