"""Who is calling: the API key (x-goog-api-key, ?key= or Authorization: Bearer) -> a tenant.

The raw key is never stored: in "open" mode the tenant is a digest of it, in "keys" mode the configured
digests name the tenants.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from litestar import Request

from ..observability import context
from ..settings import AuthSettings
from .errors import ApiError

_TENANT_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")

#: what a request without a key is told, in Google's dialect and in OpenAI's (whose SDKs send the key as a
#: bearer token)
NO_KEY_GOOGLE = "An API key is required: send it in the x-goog-api-key header"
NO_KEY_OPENAI = "An API key is required: send it as `Authorization: Bearer <key>`"
_KNOWN_KEYS = 10_000


class Authenticator:
    def __init__(self, settings: AuthSettings) -> None:
        self.settings = settings
        for name in settings.keys.values():
            # a tenant name goes into every Redis key of the tenant: two names must never become one
            if not _TENANT_NAME.fullmatch(name):
                raise ValueError(f"auth.keys: tenant name {name!r} may hold only A-Z a-z 0-9 _ . - (1-64)")
        self.tenants = {digest.lower(): name for digest, name in settings.keys.items()}
        # recently seen keys (in memory only), so a busy client is not hashed on every request
        self._known: dict[str, str] = {}

    def tenant(self, request: Request[Any, Any, Any], no_key: str = NO_KEY_GOOGLE) -> str:
        key = _key_of(request)
        if not key:
            raise ApiError(401, no_key)
        tenant = self._known.get(key)
        if tenant is not None:
            # the tenant's id (a digest of the key, or its configured name) goes into the logs; the key never
            context.set_tenant(tenant)
            return tenant
        digest = hashlib.sha256(key.encode()).hexdigest()
        tenant = digest[:32] if self.settings.mode == "open" else self.tenants.get(digest)
        if tenant is not None:
            if len(self._known) >= _KNOWN_KEYS:
                self._known.clear()
            self._known[key] = tenant
        if tenant is None:
            raise ApiError(401, "The API key is not valid")
        context.set_tenant(tenant)
        return tenant


def _key_of(request: Request[Any, Any, Any]) -> str | None:
    headers = request.headers
    key = headers.get("x-goog-api-key") or request.query_params.get("key")
    if key:
        return str(key).strip()
    authorization = headers.get("authorization", "")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return None
