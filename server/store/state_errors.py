"""Redis's error replies that say "not now": the Redis asked is not in a state to serve (a Cluster that lost
coverage or is moving a slot, a replica that lost its primary, a primary demoted by a failover), read as
outages (store/outage.py: 503 with Retry-After) by every client of the store, whichever parser reads them.

redis-py's single-node parser knows LOADING (a ConnectionError) and READONLY (a ReadOnlyError), and reads
CLUSTERDOWN, MASTERDOWN and TRYAGAIN as plain ResponseErrors, the errors of a bug; its Cluster parser reads
those three as the classes below. Every client here (the single-node pools, the scripts' pipelined client
of direct.py, per node of a Cluster too) reads them as the Cluster parser does.
"""

from __future__ import annotations

from typing import Any

from redis._parsers.base import BaseParser
from redis.asyncio.connection import DefaultParser
from redis.exceptions import ClusterDownError, MasterDownError, TryAgainError

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
