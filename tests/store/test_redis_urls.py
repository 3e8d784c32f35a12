"""REDIS_URL's Sentinel and Cluster forms (store/redis_urls.py): what they name, and a clear error for what
they cannot be."""

from __future__ import annotations

import pytest

from server.observability.logs import redact_url
from server.store.redis_urls import ClusterNodes, RedisUrlError, SentinelService, parse


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


def test_the_cluster_form_names_nodes_and_password() -> None:
    target = parse("redis+cluster://:s3cret@10.0.0.1:7000,node-b,10.0.0.3:7002")
    assert target.cluster == ClusterNodes(
        nodes=(("10.0.0.1", 7000), ("node-b", 6379), ("10.0.0.3", 7002)), password="s3cret"
    )
    assert target.sentinel is None and "s3cret" not in target.shown
    assert parse("redis://127.0.0.1:6379/0").cluster is None


@pytest.mark.parametrize(
    "url",
    [
        "redis+cluster://",  # no node
        "redis+cluster://127.0.0.1:7000/1",  # a Cluster has database 0 only
        "redis+cluster://127.0.0.1:port",
        "redis+cluster://:s3cret@127.0.0.1:7000?db=2",
    ],
)
def test_a_malformed_cluster_url_is_refused_with_the_syntax(url: str) -> None:
    with pytest.raises(RedisUrlError) as refused:
        parse(url, "REDIS_URL")
    assert "redis+cluster://" in str(refused.value) and "s3cret" not in str(refused.value)
