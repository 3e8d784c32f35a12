"""The RS256 keys that sign dynamic webhook deliveries, and the JWKS document that publishes them.

Keys are RSA 2048, named by their RFC 7638 thumbprint, kept in Redis (server/store/signing_keys.py) with
the private half sealed by the server key (secrets.py), so every process signs with the same current key
and serves the same JWKS (`/.well-known/jwks.json`). The first key is made by whichever process needs one
first; a rotation makes a new current key, and the replaced one stays published for `overlap_seconds`,
so receivers still verify what it signed (and their cached JWKS stays valid) until then. Keys rotate by
themselves once they are `max_age_seconds` old (30 days by default).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import time
from collections.abc import Callable, Sequence
from typing import Final

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from ..store.signing_keys import SigningKeys, StoredKey
from . import secrets
from .signing import ALGORITHM, JWT_LIFETIME_SECONDS, SigningKey

KEY_SIZE: Final = 2048
#: how long a replaced key stays published by default: receivers cache a JWKS for hours, and a token it
#: signed just before the rotation is valid for JWT_LIFETIME_SECONDS more
DEFAULT_OVERLAP_SECONDS: Final = 24 * 3600
#: a key signs for this long, then the next delivery makes a new one (a leaked key is useful for a while
#: only, and receivers exercise rotation before it is ever urgent)
DEFAULT_MAX_AGE_SECONDS: Final = 30 * 24 * 3600
#: a compare-and-set lost to another process is retried this often (each loss means a key now exists)
ATTEMPTS: Final = 3

Jwks = dict[str, list[dict[str, str]]]


def _b64(value: int) -> str:
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def public_jwk(public_key: rsa.RSAPublicKey) -> dict[str, str]:
    numbers = public_key.public_numbers()
    return {"kty": "RSA", "n": _b64(numbers.n), "e": _b64(numbers.e)}


def thumbprint(jwk: dict[str, str]) -> str:
    """RFC 7638: SHA-256 of the required members in lexicographic order, without whitespace."""
    canonical = json.dumps({name: jwk[name] for name in ("e", "kty", "n")}, separators=(",", ":"))
    return base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).decode().rstrip("=")


def _context(kid: str) -> bytes:
    # a sealed private key opens only under its own kid: records cannot swap their private halves
    return b"jwks:" + kid.encode()


def new_key(server_key: bytes, now_ms: int) -> tuple[StoredKey, SigningKey]:
    """A fresh key, as stored (its private half sealed) and as it signs."""
    private_key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_SIZE)
    public = public_jwk(private_key.public_key())
    kid = thumbprint(public)
    der = private_key.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    stored = StoredKey(kid, public, secrets.seal(der, server_key, context=_context(kid)), now_ms)
    return stored, SigningKey(kid, private_key)


def document(keys: Sequence[StoredKey]) -> Jwks:
    """The JWKS of `keys`, as `/.well-known/jwks.json` serves it."""
    return {"keys": [{**key.public, "kid": key.kid, "alg": ALGORITHM, "use": "sig"} for key in keys]}


class Keyring:
    """The signing keys of this server, over their Redis records.

    `server_keys`: the server key that seals new keys first, then any previous ones still able to open
    older records while the server key rotates."""

    def __init__(
        self,
        store: SigningKeys,
        server_keys: Sequence[bytes],
        *,
        overlap_seconds: float = DEFAULT_OVERLAP_SECONDS,
        max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not server_keys:
            raise ValueError("the webhook signing keys need a server key to seal them")
        if overlap_seconds < JWT_LIFETIME_SECONDS:
            raise ValueError(
                f"a replaced signing key must stay published at least as long as its tokens live "
                f"({JWT_LIFETIME_SECONDS} s), not {overlap_seconds:g} s"
            )
        self.store = store
        self.server_keys = list(server_keys)
        self.overlap_ms = int(overlap_seconds * 1000)
        self.max_age_ms = int(max_age_seconds * 1000)
        self.clock = clock
        #: keys already opened by this process, by kid (opening is a decryption and a DER parse)
        self.opened: dict[str, SigningKey] = {}

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    async def current(self) -> SigningKey:
        """The key that signs now; the first one is made if there is none yet, and a new one when the
        current one is older than `max_age_seconds` (the first process to see that makes it)."""
        for _ in range(ATTEMPTS):
            found = await self.store.load()
            stored = found.stored.get(found.current or "")
            if stored is not None and stored.created_ms + self.max_age_ms > self.now_ms():
                return self._open(stored)
            made = await self._install(found.current)
            if made is not None:
                return made
        raise RuntimeError("the webhook signing keys kept changing while a current one was read")

    async def rotate(self) -> SigningKey:
        """Make a new current key (the replaced one stays published for the overlap). Processes rotating
        at once make one rotation: the losers return the winner's key."""
        found = await self.store.load()
        made = await self._install(found.current)
        return made if made is not None else await self.current()

    async def document(self) -> Jwks:
        """The JWKS: every key still published, the current one first."""
        return document((await self.store.load()).published(self.now_ms()))

    async def _install(self, seen: str | None) -> SigningKey | None:
        """A new key made current if the current one is still `seen`; None if another process won."""
        now = self.now_ms()
        # RSA key generation takes tens of milliseconds of CPU: not on the event loop
        stored, key = await asyncio.to_thread(new_key, self.server_keys[0], now)
        winner = await self.store.install(seen, stored, retire_ms=now + self.overlap_ms, now_ms=now)
        if winner != key.kid:
            return None
        self.opened[key.kid] = key
        return key

    def _open(self, stored: StoredKey) -> SigningKey:
        key = self.opened.get(stored.kid)
        if key is None:
            der = secrets.unseal(stored.sealed, self.server_keys, context=_context(stored.kid))
            private_key = serialization.load_der_private_key(der, password=None)
            if not isinstance(private_key, rsa.RSAPrivateKey):
                raise secrets.BrokenSeal(f"signing key {stored.kid!r} is not an RSA key")
            key = self.opened[stored.kid] = SigningKey(stored.kid, private_key)
        return key
