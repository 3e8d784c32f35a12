"""Redis's error replies that say "not now": the Redis asked is not in a state to serve (a Cluster that lost
coverage or is moving a slot, a replica that lost its primary, a primary demoted by a failover), read as
outages (store/outage.py: 503 with Retry-After) by every client of the store, whichever parser reads them.

redis-py's single-node parser knows LOADING (a ConnectionError) and READONLY (a ReadOnlyError), and reads
CLUSTERDOWN, MASTERDOWN and TRYAGAIN as plain ResponseErrors, the errors of a bug; its Cluster parser reads
those three as the classes below. Every client here (the single-node pools, the scripts' pipelined client
of direct.py, per node of a Cluster too) reads them as the Cluster parser does.

A connection whose peer closed it (a primary demoted by a Sentinel failover drops its clients) is an outage
too: under uvloop, redis-py's write to its closed transport raises a RuntimeError that redis-py passes on,
where asyncio's own loop gives an OSError that redis-py reads as a ConnectionError. The pools' connections
(`lost_transport_reads_as_lost`) read it as asyncio's loop does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from redis._parsers.base import BaseParser
from redis.asyncio.connection import AbstractConnection, DefaultParser
from redis.exceptions import ClusterDownError, MasterDownError, TryAgainError
from redis.exceptions import ConnectionError as RedisConnectionError

#: error codes and the exception each is read as (MASTERDOWN: a replica whose link to its primary is down
#: and that serves no stale data; TRYAGAIN: a slot half-moved, a command on several of its keys)
STATE_ERRORS: dict[str, Any] = {
    "CLUSTERDOWN": ClusterDownError,
    "MASTERDOWN": MasterDownError,
    "TRYAGAIN": TryAgainError,
}


class StateParser(DefaultParser):  # type: ignore[misc,valid-type]
    """redis-py's parser for the single-node pools (connection.py), reading the replies above too."""

    EXCEPTION_CLASSES = {**DefaultParser.EXCEPTION_CLASSES, **STATE_ERRORS}


class _Errors(BaseParser):
    EXCEPTION_CLASSES = {**BaseParser.EXCEPTION_CLASSES, **STATE_ERRORS}


def error(message: str) -> Exception:
    """The exception redis-py's clients raise for the error reply `message` (direct.py's reading)."""
    exception: Exception = _Errors.parse_error(message)  # type: ignore[no-untyped-call]
    return exception


#: how uvloop's transports begin the RuntimeError of a write after they closed
_CLOSED_TRANSPORT = "unable to perform operation on"


#: each class made below, by the class it is made of (one per kind of pool, not one per pool)
_MADE: dict[type[AbstractConnection], type[AbstractConnection]] = {}


def lost_transport_reads_as_lost(base: type[AbstractConnection]) -> type[AbstractConnection]:
    """`base` (the connection class a pool chose: TCP, TLS, unix socket, Sentinel-managed), whose write to a
    transport closed by its peer raises ConnectionError (redis-py then retries it on a new connection)."""
    if base in _MADE.values():
        return base
    if base not in _MADE:
        _MADE[base] = _made_of(base)
    return _MADE[base]


def _made_of(base: type[AbstractConnection]) -> type[AbstractConnection]:

    class LostTransportIsLost(base):  # type: ignore[valid-type,misc]
        async def send_packed_command(
            self, command: bytes | str | Iterable[bytes], check_health: bool = True
        ) -> None:
            try:
                await super().send_packed_command(command, check_health)
            except RuntimeError as exc:
                if not str(exc).startswith(_CLOSED_TRANSPORT):
                    raise
                raise RedisConnectionError(f"Redis closed the connection ({exc})") from exc

    LostTransportIsLost.__name__ = LostTransportIsLost.__qualname__ = f"LostTransportIs{base.__name__}"
    return LostTransportIsLost
