"""The RS256 keys that sign dynamic webhook deliveries, as Redis keeps them (keys.SIGNING_KEYS).

Records only: making keys, sealing their private halves and building the JWKS is server/webhooks/jwks.py.
Every change is one script (install_signing_key.lua), a compare-and-set on the current key, so processes
that create the first key or rotate at the same time end up agreeing on one current key.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec
from redis.asyncio import Redis

from . import keys
from .commands import text, typed
from .scripts import Scripts


class StoredKey(msgspec.Struct, frozen=True):
    kid: str
    #: the public JWK ({"kty", "n", "e"}), kept in the clear: publishing it needs no server key
    public: dict[str, str]
    #: the private key (PKCS#8 DER), sealed with the server key (server/webhooks/secrets.py)
    sealed: str
    created_ms: int


@dataclass(slots=True)
class KeySet:
    """The keys as one read saw them."""

    current: str | None = None
    stored: dict[str, StoredKey] = field(default_factory=dict)
    #: when each replaced key stops being published (ms)
    retire_ms: dict[str, int] = field(default_factory=dict)

    def published(self, now_ms: int) -> list[StoredKey]:
        """The current key first, then the replaced ones still within their overlap, newest first."""
        live = [
            key
            for kid, key in self.stored.items()
            if kid == self.current or self.retire_ms.get(kid, 0) > now_ms
        ]
        return sorted(live, key=lambda key: (key.kid != self.current, -key.created_ms))


_decode = msgspec.json.Decoder(StoredKey).decode


class SigningKeys:
    def __init__(self, redis: Redis, scripts: Scripts) -> None:
        self.redis = typed(redis)
        self.scripts = scripts

    async def load(self) -> KeySet:
        found = KeySet()
        for name, value in (await self.redis.hgetall(keys.SIGNING_KEYS)).items():
            kind, _, kid = text(name).partition(":")
            if kind == "current":
                found.current = text(value)
            elif kind == "key":
                found.stored[kid] = _decode(value)
            elif kind == "retire":
                found.retire_ms[kid] = int(value)
        return found

    async def install(self, seen: str | None, key: StoredKey, *, retire_ms: int, now_ms: int) -> str | None:
        """Make `key` the current key if the current one is still `seen` (None: there is none yet); the
        replaced one is published until `retire_ms`. Returns the kid current afterwards: `key.kid` when
        installed, another process's when it got there first (None if the keys vanished meanwhile)."""
        current = await self.scripts.install_signing_key(
            keys=[keys.SIGNING_KEYS],
            args=[seen or "", key.kid, msgspec.json.encode(key), retire_ms, now_ms],
        )
        return None if current is None else text(current)
