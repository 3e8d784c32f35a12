"""A webhook receiver on 127.0.0.1 for the tests, and the checks a real receiver makes of a delivery: the
Standard Webhooks signature with the `standardwebhooks` package, and a `webhook_config` delivery's JWT
against the server's JWKS with PyJWT."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import jwt
from standardwebhooks import Webhook

from tests.fakes.http import FakeServer, RecordedRequest, Script
from tests.waiting import until_async

OK = Script(status=200, body=b"{}")


class Receiver:
    """A FakeServer answering 200 unless scripted otherwise, with waits for what it received."""

    def __init__(self, default: Script = OK) -> None:
        self.server = FakeServer(default, keep_alive=False)

    async def __aenter__(self) -> Receiver:
        await self.server.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.server.stop()

    @property
    def uri(self) -> str:
        return self.server.base_url + "/hook"

    @property
    def requests(self) -> list[RecordedRequest]:
        return self.server.requests

    def events(self) -> Iterator[dict[str, Any]]:
        for request in self.requests:
            yield json.loads(request.body)

    async def wait_for(self, count: int, within: float = 15.0) -> list[RecordedRequest]:
        """The first `count` requests, once they have come."""

        async def enough() -> bool:
            return len(self.requests) >= count

        await until_async(enough, within=within)
        return self.requests[:count]

    async def nothing_more(self, count: int, seconds: float) -> None:
        """No request beyond the first `count` comes in `seconds`."""
        await asyncio.sleep(seconds)
        assert len(self.requests) == count, [r.body for r in self.requests[count:]]


def verify_static(request: RecordedRequest, secret: str) -> dict[str, Any]:
    """What a receiver written with `standardwebhooks` does: raises unless one signature is `secret`'s."""
    payload: dict[str, Any] = Webhook(secret).verify(request.body, request.headers)
    return payload


def signatures(request: RecordedRequest) -> list[str]:
    return request.headers["webhook-signature"].split(" ")


def verify_dynamic(request: RecordedRequest, base_url: str, issuer: str) -> dict[str, Any]:
    """What a receiver of `webhook_config` deliveries does: the JWT's key from the JWKS by its kid, RS256,
    the issuer, the id and the body's digest."""
    jwks = httpx.get(f"{base_url}/.well-known/jwks.json").json()
    token = request.headers["webhook-signature"]
    kid = jwt.get_unverified_header(token)["kid"]
    key = jwt.PyJWKSet.from_dict(jwks)[kid]
    claims: dict[str, Any] = jwt.decode(
        token, key.key, algorithms=["RS256"], issuer=issuer, options={"require": ["exp", "iat", "jti"]}
    )
    assert claims["jti"] == request.headers["webhook-id"]
    assert claims["body_sha256"] == hashlib.sha256(request.body).hexdigest()
    return claims
