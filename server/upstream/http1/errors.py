"""How an upstream HTTP exchange fails; `upstream/transport.py` turns each into an `UpstreamError`."""

from __future__ import annotations


class HttpError(Exception):
    """A failure of the exchange itself (no HTTP status to report)."""

    #: a wait ran out (the caller may retry later) rather than the connection failing
    timeout = False


class ConnectFailed(HttpError):
    """The connection (or its TLS handshake) could not be made, or the URL cannot be called."""


class ProxyRefused(ConnectFailed):
    """The proxy answered the CONNECT with something else than a 2xx (407: it wants other credentials)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class ConnectTimedOut(HttpError):
    timeout = True


class PoolTimedOut(HttpError):
    """Every connection the route allows stayed busy for the pool timeout."""

    timeout = True


class ReadTimedOut(HttpError):
    """Nothing arrived for the read timeout."""

    timeout = True


class DeadlineExceeded(HttpError):
    """The call's overall deadline passed while waiting for the upstream."""

    timeout = True


class ConnectionBroken(HttpError):
    """The connection closed, or sent something that is not HTTP, before the response's end."""
