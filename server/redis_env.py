"""REDIS_URL and REDIS_QUEUE_URL, as the environment gives them: a scheme this server speaks, and a pair
it can run on (arq's queue cannot live on a Redis Cluster, so a Cluster's records need a queue elsewhere).

Which hosts and services a URL names is the store's concern (store/redis_urls.py); the values are never
repeated in an error, since a Redis URL often carries a password.
"""

from __future__ import annotations

from collections.abc import Mapping

from .config_errors import ConfigError

CLUSTER = "redis+cluster://"
SCHEMES = ("redis://", "rediss://", "unix://", "redis+sentinel://", CLUSTER)


def urls(env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(REDIS_URL, REDIS_QUEUE_URL), each None when unset or empty."""
    url, queue_url = _url(env, "REDIS_URL"), _url(env, "REDIS_QUEUE_URL")
    if url is not None and url.startswith(CLUSTER) and queue_url is None:
        raise ConfigError(
            "environment variable REDIS_QUEUE_URL: required with a redis+cluster:// REDIS_URL (the job "
            "queue cannot live on a Cluster: name one Redis or a Sentinel service for it)"
        )
    if queue_url is not None and queue_url.startswith(CLUSTER):
        raise ConfigError(
            "environment variable REDIS_QUEUE_URL: the job queue cannot live on a Cluster (arq does not "
            "support one): name one Redis or a Sentinel service"
        )
    return url, queue_url


def _url(env: Mapping[str, str], variable: str) -> str | None:
    url = env.get(variable) or None
    if url is not None and not url.startswith(SCHEMES):
        raise ConfigError(
            f"environment variable {variable}: expected redis://, rediss://, unix://, redis+sentinel:// "
            "or redis+cluster://"
        )
    return url
