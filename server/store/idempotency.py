"""Idempotency keys: the first create with a key records which interaction (and which body) it made, in
the script that stores that interaction (create.lua), so a key never points at an interaction that was not
stored, and a stored interaction made with a key always has it."""

from __future__ import annotations

import hashlib

import msgspec

from . import keys


def digest(value: str | bytes) -> str:
    return hashlib.sha256(value.encode() if isinstance(value, str) else value).hexdigest()


class KeyClaim(msgspec.Struct, frozen=True):
    """What create.lua records for a key, unless the key made an interaction that still exists."""

    name: str
    #: "<interaction id> <body digest>"
    value: str
    ttl_ms: int


def claim(tenant: str, key: str, interaction_id: str, body: bytes, ttl_seconds: int) -> KeyClaim:
    return KeyClaim(
        name=keys.idempotency(tenant, digest(key)),
        value=f"{interaction_id} {digest(body)}",
        ttl_ms=ttl_seconds * 1000,
    )


def parse(value: str) -> tuple[str, str]:
    """(interaction id, body digest) of a recorded key."""
    known_id, _, known_digest = value.partition(" ")
    return known_id, known_digest
