"""What a Redis URL (REDIS_URL, REDIS_QUEUE_URL) names: one Redis, the primary a group of Sentinels watches,
or the nodes of a Redis Cluster to start from.

    redis://[:password@]host:port[/db]          rediss://… (TLS)          unix:///path/to/redis.sock
    redis+sentinel://[:password@]host[:port][,host[:port]...]/service[/db]
    redis+cluster://[:password@]host[:port][,host[:port]...]
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import msgspec

SENTINEL_SCHEME = "redis+sentinel"
CLUSTER_SCHEME = "redis+cluster"
SCHEMES = ("redis", "rediss", "unix", SENTINEL_SCHEME, CLUSTER_SCHEME)
#: the port of a Sentinel named without one, and of a Cluster node
SENTINEL_PORT = 26379
CLUSTER_PORT = 6379

_SENTINEL_SYNTAX = "redis+sentinel://[:password@]host:26379,host:26379/service[/db]"
_CLUSTER_SYNTAX = "redis+cluster://[:password@]host:port,host:port (any nodes of the cluster; no db)"


class RedisUrlError(ValueError):
    """A Redis URL cannot be used; the message names the variable and the problem."""


class SentinelService(msgspec.Struct, frozen=True):
    """Where Redis Sentinel runs and the name of the primary it watches (the password is the primary's,
    and its replicas')."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    password: str | None = None


class ClusterNodes(msgspec.Struct, frozen=True):
    """Nodes of a Redis Cluster to learn its slot map from (any of them will do; the client finds the
    rest, and follows the map as slots move)."""

    nodes: tuple[tuple[str, int], ...]
    password: str | None = None


class RedisTarget(msgspec.Struct, frozen=True):
    url: str
    unix: bool
    #: set for a Sentinel URL: the clients ask the Sentinels for the primary, and again after a failover
    sentinel: SentinelService | None = None
    #: set for a Cluster URL
    cluster: ClusterNodes | None = None

    @property
    def shown(self) -> str:
        """The URL with any password replaced, for logs and errors."""
        parts = urlsplit(self.url)
        if parts.password is None:
            return self.url
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
        return urlunsplit(parts._replace(netloc=netloc))


def parse(url: str, variable: str = "REDIS_URL") -> RedisTarget:
    scheme = urlsplit(url).scheme
    if scheme not in SCHEMES:
        raise RedisUrlError(
            f"{variable}: {_redact(url)!r} is not a Redis URL (expected redis://host:port/db, rediss://…, "
            "unix:///path/to/redis.sock, redis+sentinel://… or redis+cluster://…)"
        )
    if scheme == "unix" and not urlsplit(url).path:
        raise RedisUrlError(f"{variable}: {url!r} names no socket path")
    if scheme == SENTINEL_SCHEME:
        return RedisTarget(url=url, unix=False, sentinel=_sentinel_service(url, variable))
    if scheme == CLUSTER_SCHEME:
        return RedisTarget(url=url, unix=False, cluster=_cluster_nodes(url, variable))
    return RedisTarget(url=url, unix=scheme == "unix")


def _hosts(url: str, variable: str, default_port: int, syntax: str) -> tuple[tuple[str, int], ...]:
    hosts = []
    for host in filter(None, urlsplit(url).netloc.rpartition("@")[2].split(",")):
        name, _, port = host.rpartition(":") if ":" in host else (host, "", "")
        if not name or (port and not port.isdigit()):
            raise RedisUrlError(f"{variable}: {host!r} is not host or host:port ({syntax})")
        hosts.append((name, int(port or default_port)))
    return tuple(hosts)


def _password(url: str) -> str | None:
    userinfo = urlsplit(url).netloc.rpartition("@")[0]
    return userinfo.partition(":")[2] or None if userinfo else None


def _sentinel_service(url: str, variable: str) -> SentinelService:
    sentinels = _hosts(url, variable, SENTINEL_PORT, _SENTINEL_SYNTAX)
    path = [part for part in urlsplit(url).path.split("/") if part]
    if not sentinels or not path or len(path) > 2 or (len(path) == 2 and not path[1].isdigit()):
        raise RedisUrlError(f"{variable}: {_redact(url)!r} is not a Sentinel URL ({_SENTINEL_SYNTAX})")
    return SentinelService(
        sentinels=sentinels,
        service=path[0],
        db=int(path[1]) if len(path) == 2 else 0,
        password=_password(url),
    )


def _cluster_nodes(url: str, variable: str) -> ClusterNodes:
    nodes = _hosts(url, variable, CLUSTER_PORT, _CLUSTER_SYNTAX)
    parts = urlsplit(url)
    # a Cluster has database 0 only
    if not nodes or parts.path.strip("/") or parts.query:
        raise RedisUrlError(f"{variable}: {_redact(url)!r} is not a Cluster URL ({_CLUSTER_SYNTAX})")
    return ClusterNodes(nodes=nodes, password=_password(url))


def _redact(url: str) -> str:
    return RedisTarget(url=url, unix=False).shown
