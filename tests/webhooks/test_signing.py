"""Webhook signatures as receivers check them: Standard Webhooks' own package verifies the static ones,
PyJWT the dynamic ones against the JWKS document; and the secrets' encryption at rest. No server."""

from __future__ import annotations

import base64
import hashlib
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from standardwebhooks import Webhook, WebhookVerificationError

from server.store.signing_keys import StoredKey
from server.webhooks import jwks, secrets, signing
from server.webhooks.signing import SigningKey

BODY = b'{"type":"interaction.completed","version":"v1","data":{"id":"v1_abc","status":"completed"}}'
ISSUER = "https://ix.example"
SERVER_KEY = bytes(range(32))
OTHER_SERVER_KEY = bytes(range(1, 33))


def receive_dynamic(body: bytes, headers: dict[str, str], document: jwks.Jwks) -> dict[str, Any]:
    """What a receiver of a `webhook_config` delivery does: the key named by the token's `kid`, from the
    JWKS, verifies it; the token must be about this delivery."""
    token = headers["webhook-signature"]
    kid = jwt.get_unverified_header(token)["kid"]
    found = [each for each in document["keys"] if each["kid"] == kid]
    assert found, f"kid {kid!r} is not in the JWKS"
    claims: dict[str, Any] = jwt.decode(
        token,
        jwt.PyJWK(found[0]).key,
        algorithms=["RS256"],
        issuer=ISSUER,
        options={"require": ["iss", "iat", "exp", "jti"]},
    )
    if claims["body_sha256"] != hashlib.sha256(body).hexdigest():
        raise jwt.InvalidTokenError("the token signs another body")
    assert claims["jti"] == headers["webhook-id"]
    assert claims["iat"] == int(headers["webhook-timestamp"])
    return claims


def test_a_new_secret_is_whsec_and_32_random_bytes() -> None:
    secret = secrets.new_secret()
    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret.removeprefix("whsec_"), validate=True)) == 32
    assert secrets.new_secret() != secret


def test_the_truncated_secret_shows_the_prefix_and_the_last_four_characters() -> None:
    secret = secrets.new_secret()
    shown = secrets.truncated(secret)
    assert shown == "whsec_…" + secret[-4:]
    assert secret[6:-4] not in shown


def test_static_signatures_verify_with_the_standard_webhooks_package() -> None:
    secret, now = secrets.new_secret(), int(time.time())
    headers = signing.static_headers("msg_1", now, BODY, [secret])
    assert headers["webhook-id"] == "msg_1" and headers["webhook-timestamp"] == str(now)
    assert Webhook(secret).verify(BODY, headers)["data"]["id"] == "v1_abc"


def test_during_a_rotation_each_secret_alone_verifies() -> None:
    old, new, now = secrets.new_secret(), secrets.new_secret(), int(time.time())
    headers = signing.static_headers("msg_1", now, BODY, [new, old])
    assert len(headers["webhook-signature"].split(" ")) == 2
    for secret in (old, new):
        Webhook(secret).verify(BODY, headers)
    with pytest.raises(WebhookVerificationError, match="No matching signature"):
        Webhook(secrets.new_secret()).verify(BODY, headers)


def test_a_tampered_body_or_an_old_timestamp_is_refused() -> None:
    secret, now = secrets.new_secret(), int(time.time())
    headers = signing.static_headers("msg_1", now, BODY, [secret])
    with pytest.raises(WebhookVerificationError, match="No matching signature"):
        Webhook(secret).verify(BODY.replace(b"completed", b"cancelled"), headers)
    with pytest.raises(WebhookVerificationError, match="No matching signature"):
        Webhook(secret).verify(BODY, {**headers, "webhook-id": "msg_2"})
    stale = signing.static_headers("msg_1", now - 600, BODY, [secret])
    with pytest.raises(WebhookVerificationError, match="too old"):
        Webhook(secret).verify(BODY, stale)


def test_a_static_delivery_needs_a_secret() -> None:
    with pytest.raises(ValueError, match="at least one"):
        signing.static_headers("msg_1", int(time.time()), BODY, [])


def make_key(server_key: bytes = SERVER_KEY) -> tuple[StoredKey, SigningKey]:
    return jwks.new_key(server_key, int(time.time() * 1000))


def test_a_dynamic_signature_verifies_against_the_jwks() -> None:
    stored, key = make_key()
    now = int(time.time())
    headers = signing.dynamic_headers("msg_1", now, BODY, key, ISSUER)
    document = jwks.document([stored])
    assert document["keys"][0].keys() == {"kty", "n", "e", "kid", "alg", "use"}
    assert document["keys"][0]["kid"] == key.kid == jwks.thumbprint(stored.public)
    claims = receive_dynamic(BODY, headers, document)
    assert claims["exp"] == now + signing.JWT_LIFETIME_SECONDS
    assert jwt.get_unverified_header(headers["webhook-signature"])["alg"] == "RS256"


def test_a_dynamic_signature_on_another_body_or_by_another_key_is_refused() -> None:
    stored, key = make_key()
    headers = signing.dynamic_headers("msg_1", int(time.time()), BODY, key, ISSUER)
    with pytest.raises(jwt.InvalidTokenError, match="another body"):
        receive_dynamic(BODY + b" ", headers, jwks.document([stored]))
    impostor = SigningKey(key.kid, rsa.generate_private_key(public_exponent=65537, key_size=2048))
    forged = signing.dynamic_headers("msg_1", int(time.time()), BODY, impostor, ISSUER)
    with pytest.raises(jwt.InvalidSignatureError):
        receive_dynamic(BODY, forged, jwks.document([stored]))


def test_an_expired_dynamic_signature_is_refused() -> None:
    stored, key = make_key()
    old = int(time.time()) - signing.JWT_LIFETIME_SECONDS - 60
    headers = signing.dynamic_headers("msg_1", old, BODY, key, ISSUER)
    with pytest.raises(jwt.ExpiredSignatureError):
        receive_dynamic(BODY, headers, jwks.document([stored]))


def test_a_sealed_secret_opens_with_its_key_and_context() -> None:
    secret = secrets.new_secret()
    blob = secrets.seal(secret.encode(), SERVER_KEY, context=b"t1/wh_1")
    assert secret not in blob and blob.startswith(f"ixs1.{secrets.key_id(SERVER_KEY)}.")
    assert secrets.unseal(blob, SERVER_KEY, context=b"t1/wh_1") == secret.encode()
    # a random nonce per seal: the same secret never seals to the same blob
    assert secrets.seal(secret.encode(), SERVER_KEY, context=b"t1/wh_1") != blob
    # while the server key rotates, the previous one still opens what it sealed
    assert secrets.unseal(blob, [OTHER_SERVER_KEY, SERVER_KEY], context=b"t1/wh_1") == secret.encode()


def test_a_wrong_key_or_context_raises_naming_no_key() -> None:
    blob = secrets.seal(b"whsec_x", SERVER_KEY, context=b"t1/wh_1")
    with pytest.raises(secrets.UnknownServerKey) as unknown:
        secrets.unseal(blob, OTHER_SERVER_KEY, context=b"t1/wh_1")
    assert SERVER_KEY.hex() not in str(unknown.value) and "whsec" not in str(unknown.value)
    with pytest.raises(secrets.BrokenSeal):
        secrets.unseal(blob, SERVER_KEY, context=b"t1/wh_2")
    # a blob claiming the right key id but sealed by another key
    forged = secrets.seal(b"whsec_x", OTHER_SERVER_KEY).replace(
        secrets.key_id(OTHER_SERVER_KEY), secrets.key_id(SERVER_KEY)
    )
    with pytest.raises(secrets.BrokenSeal):
        secrets.unseal(forged, SERVER_KEY)
    with pytest.raises(ValueError, match="32 bytes, not 16"):
        secrets.seal(b"whsec_x", SERVER_KEY[:16])


def test_every_flipped_byte_of_a_sealed_secret_raises() -> None:
    blob = secrets.seal(b"whsec_secret", SERVER_KEY)
    prefix, _, body = blob.rpartition(".")
    raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    for index in range(len(raw)):
        flipped = bytearray(raw)
        flipped[index] ^= 0x01
        edited = f"{prefix}.{base64.urlsafe_b64encode(bytes(flipped)).decode().rstrip('=')}"
        with pytest.raises(secrets.BrokenSeal):
            secrets.unseal(edited, SERVER_KEY)
    malformed = ("", "ixs1.", blob.replace("ixs1", "ixs2"), blob + ".x", prefix + ".!!!", prefix + ".AA")
    for each in malformed:
        with pytest.raises(secrets.SealError):
            secrets.unseal(each, SERVER_KEY)
