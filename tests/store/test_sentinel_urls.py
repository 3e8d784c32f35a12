"""REDIS_URL's Sentinel form (store/connection.py): what it names, and a clear error for what it cannot be."""

from __future__ import annotations

import pytest

from server.observability.logs import redact_url
from server.store.redis_urls import RedisUrlError, SentinelService, parse


def test_the_sentinel_form_names_sentinels_service_db_and_password() -> None:
    target = parse("redis+sentinel://:s3cret@10.0.0.1:26380,sentinel-b,10.0.0.3:26379/primary/2")
    assert target.sentinel == SentinelService(
        sentinels=(("10.0.0.1", 26380), ("sentinel-b", 26379), ("10.0.0.3", 26379)),
        service="primary",
        db=2,
        password="s3cret",
    )
    assert target.unix is False
    assert parse("redis+sentinel://127.0.0.1/primary").sentinel == SentinelService(
        sentinels=(("127.0.0.1", 26379),), service="primary"
    )
    assert parse("redis://127.0.0.1:6379/0").sentinel is None


@pytest.mark.parametrize(
    "url",
    [
        "redis+sentinel://127.0.0.1:26379",  # no service
        "redis+sentinel:///primary",  # no sentinel
        "redis+sentinel://127.0.0.1:port/primary",
        "redis+sentinel://127.0.0.1/primary/db0",
        "redis+sentinel://127.0.0.1/primary/0/extra",
    ],
)
def test_a_malformed_sentinel_url_is_refused_with_the_syntax(url: str) -> None:
    with pytest.raises(RedisUrlError) as refused:
        parse(url)
    assert "redis+sentinel://" in str(refused.value)


def test_the_password_is_never_shown() -> None:
    url = "redis+sentinel://:s3cret@127.0.0.1:26379,127.0.0.2/primary"
    assert "s3cret" not in parse(url).shown
    assert "s3cret" not in redact_url(url)
    with pytest.raises(RedisUrlError) as refused:
        parse("redis+sentinel://:s3cret@127.0.0.1:x/primary")
    assert "s3cret" not in str(refused.value)
