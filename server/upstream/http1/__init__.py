"""The HTTP/1.1 client of the upstream calls: pooled keep-alive connections on asyncio protocols, responses
parsed by httptools (llhttp, in C), bodies handed over as they arrive.

Why our own and not a general client: an upstream call is one POST whose answer is streamed back, and the
general clients spend most of their time on what this path never uses. Measured on this project's machine,
16 concurrent streamed POSTs of a short answer to a fake upstream in another process cost the caller, per
request, 0.17-0.26 ms of CPU through aiohttp's engine behind httpx's API, 0.10 ms through an engine like this
one behind httpx's Request and Response, and 0.01 ms through this one (bench/README.md, issue 12). It
honours what users of those clients expect: the proxies and the trust store of `server/outbound.py`
(HTTPS_PROXY, NO_PROXY, SSL_CERT_FILE, ...; proxy.py says how a call goes through a proxy).
"""

from .client import Client, Response
from .errors import (
    ConnectFailed,
    ConnectionBroken,
    ConnectTimedOut,
    DeadlineExceeded,
    HttpError,
    PoolTimedOut,
    ProxyRefused,
    ReadTimedOut,
)
from .request import Target, Timeouts

__all__ = [
    "Client",
    "ConnectFailed",
    "ConnectTimedOut",
    "ConnectionBroken",
    "DeadlineExceeded",
    "HttpError",
    "PoolTimedOut",
    "ProxyRefused",
    "ReadTimedOut",
    "Response",
    "Target",
    "Timeouts",
]
