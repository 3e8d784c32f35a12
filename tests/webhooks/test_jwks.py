"""The JWKS signing keys in Redis (the session's private redis-server): one first key however many processes
ask at once, rotation with an overlap in which both keys verify, expired keys unpublished, private keys
sealed at rest."""

from __future__ import annotations

import asyncio
import time
from typing import Any, cast

import jwt
import pytest

from server.store import keys
from server.store.scripts import Scripts
from server.store.signing_keys import SigningKeys
from server.store.store import Store
from server.webhooks import jwks, secrets, signing

from .test_signing import BODY, ISSUER, OTHER_SERVER_KEY, SERVER_KEY, receive_dynamic

OVERLAP = 3600.0


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def keyring(store: Store, clock: Clock, server_keys: tuple[bytes, ...] = (SERVER_KEY,)) -> jwks.Keyring:
    """A process's keyring: its own scripts and cache over the shared Redis."""
    records = SigningKeys(store.redis, Scripts(store.redis, store.direct))
    return jwks.Keyring(records, server_keys, overlap_seconds=OVERLAP, clock=clock)


async def raw(store: Store) -> dict[bytes, bytes]:
    """The signing keys' hash as Redis holds it."""
    found: dict[bytes, bytes] = await cast(Any, store.redis).hgetall(keys.SIGNING_KEYS)
    return found


def deliver(key: signing.SigningKey) -> dict[str, str]:
    """A delivery signed now (the keyring's clock may be ahead: the receiver's is real)."""
    return signing.dynamic_headers("msg_1", int(time.time()), BODY, key, ISSUER)


async def test_processes_asking_at_once_agree_on_one_first_key(store: Store) -> None:
    clock = Clock()
    assert await keyring(store, clock).document() == {"keys": []}
    firsts = await asyncio.gather(*(keyring(store, clock).current() for _ in range(6)))
    assert len({key.kid for key in firsts}) == 1
    document = await keyring(store, clock).document()
    assert [each["kid"] for each in document["keys"]] == [firsts[0].kid]
    # every process signs with it, and a receiver verifies each against the one JWKS
    for key in firsts:
        receive_dynamic(BODY, deliver(key), document)


async def test_after_a_rotation_both_keys_verify_until_the_overlap_ends(store: Store) -> None:
    clock = Clock()
    ring = keyring(store, clock)
    old = await ring.current()
    signed_before = deliver(old)
    new = await ring.rotate()
    assert new.kid != old.kid
    assert (await keyring(store, clock).current()).kid == new.kid
    document = await ring.document()
    assert [each["kid"] for each in document["keys"]] == [new.kid, old.kid]
    receive_dynamic(BODY, signed_before, document)
    receive_dynamic(BODY, deliver(new), document)

    clock.now += OVERLAP + 1
    document = await ring.document()
    assert [each["kid"] for each in document["keys"]] == [new.kid]
    with pytest.raises(AssertionError, match="not in the JWKS"):
        receive_dynamic(BODY, deliver(old), document)
    receive_dynamic(BODY, deliver(new), document)


async def test_the_next_rotation_drops_keys_past_their_overlap(store: Store) -> None:
    clock = Clock()
    ring = keyring(store, clock)
    first = await ring.current()
    await ring.rotate()
    clock.now += OVERLAP + 1
    third = await ring.rotate()
    stored = await raw(store)
    assert f"key:{first.kid}".encode() not in stored and f"retire:{first.kid}".encode() not in stored
    assert len((await ring.document())["keys"]) == 2
    assert (await ring.current()).kid == third.kid


async def test_a_key_past_its_age_is_replaced_by_the_next_signer(store: Store) -> None:
    clock = Clock()
    first = await keyring(store, clock).current()
    clock.now += jwks.DEFAULT_MAX_AGE_SECONDS - 60
    assert (await keyring(store, clock).current()).kid == first.kid
    clock.now += 120
    signers = await asyncio.gather(*(keyring(store, clock).current() for _ in range(4)))
    assert len({key.kid for key in signers}) == 1 and signers[0].kid != first.kid
    document = await keyring(store, clock).document()
    assert [each["kid"] for each in document["keys"]] == [signers[0].kid, first.kid]


async def test_processes_rotating_at_once_make_one_rotation(store: Store) -> None:
    clock = Clock()
    old = await keyring(store, clock).current()
    rotated = await asyncio.gather(*(keyring(store, clock).rotate() for _ in range(4)))
    assert len({key.kid for key in rotated}) == 1 and rotated[0].kid != old.kid
    document = await keyring(store, clock).document()
    assert [each["kid"] for each in document["keys"]] == [rotated[0].kid, old.kid]


async def test_private_keys_are_sealed_and_need_the_server_key(store: Store) -> None:
    clock = Clock()
    key = await keyring(store, clock).current()
    stored = b" ".join((await raw(store)).values())
    assert b"PRIVATE" not in stored and b'"d"' not in stored and b"ixs1." in stored
    with pytest.raises(secrets.UnknownServerKey):
        await keyring(store, clock, (OTHER_SERVER_KEY,)).current()
    # a rotated server key: the new one seals, the previous one still opens the existing key
    rotated = keyring(store, clock, (OTHER_SERVER_KEY, SERVER_KEY))
    assert (await rotated.current()).kid == key.kid
    token = deliver(await rotated.current())["webhook-signature"]
    assert jwt.get_unverified_header(token)["kid"] == key.kid


def test_the_overlap_outlives_the_tokens() -> None:
    with pytest.raises(ValueError, match="at least as long"):
        jwks.Keyring(SigningKeys.__new__(SigningKeys), [SERVER_KEY], overlap_seconds=60)
    with pytest.raises(ValueError, match="server key"):
        jwks.Keyring(SigningKeys.__new__(SigningKeys), [])
