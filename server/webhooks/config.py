"""A request's `webhook_config`, checked as the request is taken: its URIs under the same rules as a
webhook's (a refused one is a 400 naming it, not a delivery that fails a day later), and its bounds."""

from __future__ import annotations

import msgspec

from ..errors import InvalidArgument
from ..protocol.interaction import WebhookConfig
from ..sections import WebhookSettings
from .addresses import AllowList, Resolver, UriRefused, check_uri, system_resolver

FIELD = "webhook_config"
#: the warning of a webhook_config on a request that stores nothing: there is no interaction to tell of
NOT_STORED = (
    "webhook_config is ignored with store=false: nothing is stored, so no event follows; the answer is "
    "this response"
)
#: the warning of one that names no URI: uris, when set, replace the registered webhooks; unset, they stay
NO_URIS = (
    "webhook_config names no uris: this interaction's events go to the registered webhooks, as without it, "
    "and its user_metadata is not sent"
)


async def check(
    config: WebhookConfig,
    settings: WebhookSettings,
    allow: AllowList,
    resolver: Resolver = system_resolver,
) -> list[str]:
    """Refuse a config this server would not deliver to (InvalidArgument naming the field); returns the
    warnings of one that is valid but asks for nothing."""
    if len(config.uris) > settings.max_config_uris:
        raise InvalidArgument(
            f"at most {settings.max_config_uris} URIs are allowed, not {len(config.uris)}", f"{FIELD}.uris"
        )
    if config.user_metadata is not None:
        size = len(msgspec.json.encode(config.user_metadata))
        if size > settings.max_user_metadata_bytes:
            raise InvalidArgument(
                f"{size} bytes as JSON; at most {settings.max_user_metadata_bytes} are allowed",
                f"{FIELD}.user_metadata",
            )
    for n, uri in enumerate(config.uris):
        try:
            await check_uri(uri, allow, resolver)
        except UriRefused as exc:
            raise InvalidArgument(exc.message, f"{FIELD}.uris[{n}]") from None
    return [] if config.uris else [NO_URIS]
