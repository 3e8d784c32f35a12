"""Webhook signing secrets, and the encryption at rest of every secret the webhooks keep in Redis.

A signing secret is `whsec_` + base64 of 32 random bytes, the form Standard Webhooks and Google show; it is
shown once, at create and rotate, and afterwards only as its truncated form.

At rest a secret (or a JWKS private key, server/webhooks/jwks.py) is sealed with a server key: AES-256-GCM,
a random 96-bit nonce per seal, as the text blob

    ixs1.<key id>.<base64url(nonce ‖ ciphertext ‖ tag)>

`ixs1` names the format; the key id is a fingerprint of the server key (not the key), so that a process
configured with the current key and the previous ones opens blobs sealed by any of them while keys rotate.
The format, the key id and a caller's `context` (e.g. the tenant and webhook id) are the associated data:
a blob moved to another webhook, or edited in any byte, fails to open instead of yielding garbage.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
from collections.abc import Sequence
from typing import Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ..errors import ServerError

PREFIX: Final = "whsec_"
SECRET_BYTES: Final = 32
SERVER_KEY_BYTES: Final = 32
FORMAT: Final = "ixs1"
NONCE_BYTES: Final = 12
#: characters of a secret's end shown in `truncated_secret`
SHOWN_TAIL: Final = 4


class SealError(ServerError):
    """A sealed blob could not be opened. Messages name the key id at most, never a key or a secret."""


class UnknownServerKey(SealError):
    """The blob was sealed with a server key this process is not configured with."""


class BrokenSeal(SealError):
    """The blob is malformed, edited, sealed for another context, or its key id matches a wrong key."""


def new_secret() -> str:
    """A new signing secret, as shown to its owner once."""
    return PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def truncated(secret: str) -> str:
    """The form `signing_secrets[].truncated_secret` shows: `whsec_…` and the last 4 characters.

    The prefix carries no secret bits and the tail 16 (the last of base64's 44 characters for 32 bytes is
    padding, the one before it holds 4 bits), which leaves 240 unknown bits while still telling a webhook's
    current and previous secrets apart at a glance, the way API dashboards show the end of a key."""
    return f"{PREFIX}…{secret[-SHOWN_TAIL:]}"


def key_id(server_key: bytes) -> str:
    """A public fingerprint of a server key: 32 bits of a domain-separated SHA-256, not enough to learn
    anything of a 256-bit key, enough to pick the right one of a few configured keys."""
    _check_key(server_key)
    return hashlib.sha256(b"ix webhook server key id\0" + server_key).hexdigest()[:8]


def seal(plaintext: bytes, server_key: bytes, *, context: bytes = b"") -> str:
    """Encrypt `plaintext` under `server_key`, bound to `context` (the same context opens it)."""
    kid = key_id(server_key)
    nonce = secrets.token_bytes(NONCE_BYTES)
    sealed = AESGCM(server_key).encrypt(nonce, plaintext, _associated(kid, context))
    return f"{FORMAT}.{kid}.{base64.urlsafe_b64encode(nonce + sealed).decode().rstrip('=')}"


def unseal(blob: str, server_keys: bytes | Sequence[bytes], *, context: bytes = b"") -> bytes:
    """Decrypt a blob of `seal` with whichever of `server_keys` sealed it.

    Raises UnknownServerKey when none of them did, BrokenSeal when the blob was changed or its context
    differs."""
    keys = [server_keys] if isinstance(server_keys, bytes) else list(server_keys)
    kid, body = _parts(blob)
    key = next((each for each in keys if key_id(each) == kid), None)
    if key is None:
        raise UnknownServerKey(
            f"a sealed webhook secret names server key {kid!r}, which is not configured "
            f"(configured: {', '.join(repr(key_id(each)) for each in keys) or 'none'})"
        )
    raw = _decode(body)
    if len(raw) <= NONCE_BYTES:
        raise BrokenSeal("a sealed webhook secret is malformed")
    try:
        return AESGCM(key).decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], _associated(kid, context))
    except InvalidTag:
        raise BrokenSeal(
            "a sealed webhook secret failed authentication: it was altered, sealed for another owner, "
            "or its key id matches a different key"
        ) from None


def _associated(kid: str, context: bytes) -> bytes:
    return f"{FORMAT}.{kid}.".encode() + context


def _parts(blob: str) -> tuple[str, str]:
    parts = blob.split(".")
    if len(parts) != 3 or parts[0] != FORMAT:
        raise BrokenSeal("a sealed webhook secret is malformed (or of an unknown format)")
    return parts[1], parts[2]


def _decode(body: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        raise BrokenSeal("a sealed webhook secret is malformed") from None


def _check_key(server_key: bytes) -> None:
    if len(server_key) != SERVER_KEY_BYTES:
        # the length only: the key itself never goes into a message
        raise ValueError(f"a webhook server key is {SERVER_KEY_BYTES} bytes, not {len(server_key)}")


def secret_context(tenant: str, webhook_id: str) -> bytes:
    """What a webhook's signing secrets are sealed under: a blob copied to another webhook or tenant fails
    to open."""
    return f"webhook:{tenant}:{webhook_id}".encode()
