"""The signature headers of one webhook delivery, for both kinds of webhook Google's API has.

Static webhooks (the Webhooks resource) follow Standard Webhooks: `webhook-id`, `webhook-timestamp` and
`webhook-signature`, one `v1,<base64 HMAC-SHA256>` entry per valid secret, space-separated, so a receiver
holding either secret verifies during a rotation. The HMACs come from the `standardwebhooks` package, the
one receivers use to verify.

Dynamic webhooks (a request's `webhook_config`) carry the same three headers, but `webhook-signature` is an
RS256 JWT that receivers verify against our JWKS (server/webhooks/jwks.py), as Google's are. Its claims:

    iss          the issuer the server is configured with (its public base URL)
    iat          the delivery's timestamp, the same second as `webhook-timestamp`
    exp          iat + a few minutes: a captured token is useless after that
    jti          the `webhook-id` (the same on every retry of one event: receivers deduplicate on it)
    body_sha256  hex SHA-256 of the raw body, so the token cannot be replayed with another body

and its header names the key (`kid`), so receivers pick it from the JWKS, through rotations.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import jwt
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from standardwebhooks import Webhook

ID_HEADER: Final = "webhook-id"
TIMESTAMP_HEADER: Final = "webhook-timestamp"
SIGNATURE_HEADER: Final = "webhook-signature"
ALGORITHM: Final = "RS256"
#: how long a dynamic delivery's JWT is valid: Standard Webhooks receivers allow 5 minutes of clock skew
JWT_LIFETIME_SECONDS: Final = 300
BODY_CLAIM: Final = "body_sha256"


@dataclass(frozen=True, slots=True)
class SigningKey:
    """An RS256 key that signs dynamic deliveries, named as the JWKS publishes it."""

    kid: str
    private_key: RSAPrivateKey


def body_digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def static_headers(webhook_id: str, timestamp: int, body: bytes, secrets: Sequence[str]) -> dict[str, str]:
    """The Standard Webhooks headers of a delivery, signed with every secret in `secrets` (`whsec_…`).

    `body` is sent as is; it is UTF-8 (JSON), as the signature scheme's string form needs."""
    if not secrets:
        raise ValueError("a static webhook delivery needs at least one signing secret")
    when = datetime.fromtimestamp(timestamp, tz=UTC)
    text = body.decode()
    signatures = " ".join(Webhook(secret).sign(webhook_id, when, text) for secret in secrets)
    return {ID_HEADER: webhook_id, TIMESTAMP_HEADER: str(timestamp), SIGNATURE_HEADER: signatures}


def jwt_claims(webhook_id: str, timestamp: int, body: bytes, issuer: str) -> dict[str, Any]:
    return {
        "iss": issuer,
        "iat": timestamp,
        "exp": timestamp + JWT_LIFETIME_SECONDS,
        "jti": webhook_id,
        BODY_CLAIM: body_digest(body),
    }


def dynamic_headers(
    webhook_id: str, timestamp: int, body: bytes, key: SigningKey, issuer: str
) -> dict[str, str]:
    """The headers of a `webhook_config` delivery: `webhook-signature` is an RS256 JWT by `key`."""
    token = jwt.encode(
        jwt_claims(webhook_id, timestamp, body, issuer),
        key.private_key,
        algorithm=ALGORITHM,
        headers={"kid": key.kid},
    )
    return {ID_HEADER: webhook_id, TIMESTAMP_HEADER: str(timestamp), SIGNATURE_HEADER: token}
