"""What goes on the wire for one upstream request (a POST; a GET or DELETE of a remote run): the parsed URL,
the request's head, and its timeouts."""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass

from ...outbound import Proxy
from .errors import ConnectFailed

USER_AGENT = "interaction-server"
#: a header name (RFC 9110's token)
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


@dataclass(frozen=True, slots=True)
class Target:
    """A parsed URL: parsing is done once per URL (a backend calls a handful of them)."""

    scheme: str
    host: str
    port: int
    #: what the Host header and the request line carry
    authority: str
    path: str

    @classmethod
    def parse(cls, url: str) -> Target:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConnectFailed(f"cannot call {url!r}: only http:// and https:// URLs with a host")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError as exc:
            raise ConnectFailed(f"cannot call {url!r}: {exc}") from None
        authority = parts.netloc.rpartition("@")[2]
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return cls(parts.scheme, parts.hostname, port, authority, path)

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)


@dataclass(frozen=True, slots=True)
class Timeouts:
    connect: float
    #: the longest silence while a response is awaited or read
    read: float
    #: the longest wait for a free connection when the route's limit is reached
    pool: float


def request_head(
    target: Target, headers: dict[str, str], length: int, proxy: Proxy | None = None, method: str = "POST"
) -> bytes:
    """The request line and headers; through a proxy, an http:// URL's request goes in absolute form, with
    the proxy's credentials (an https:// one goes in a tunnel, as it would go direct: proxy.py)."""
    fields = {"user-agent": USER_AGENT, "accept-encoding": "identity"}
    fields.update((name.lower(), value) for name, value in headers.items())
    fields["host"] = target.authority
    if length or method == "POST":  # a GET or DELETE without a body says nothing of one
        fields["content-length"] = str(length)
    path = target.path
    if proxy is not None and target.scheme == "http":
        path = f"http://{target.authority}{target.path}"
        if proxy.authorization is not None:
            fields["proxy-authorization"] = proxy.authorization
    lines = [f"{method} {path} HTTP/1.1"]
    for name, value in fields.items():
        if "\r" in value or "\n" in value or not _TOKEN.fullmatch(name):
            raise ConnectFailed(f"the header {name!r} holds a line break or its name is not a token")
        lines.append(f"{name}: {value}")
    try:
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    except UnicodeEncodeError as exc:
        raise ConnectFailed(f"a header holds a character HTTP/1.1 cannot carry: {exc}") from None
