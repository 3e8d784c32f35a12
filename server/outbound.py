"""The rules of every call this server makes out (upstream model calls, webhook deliveries, MCP servers):
which proxy a URL goes through, and which certificates are trusted. Read once, when the process starts,
from the environment as httpx and curl read it, and from `[outbound]` in server.toml:

- HTTPS_PROXY for https:// URLs, HTTP_PROXY for http:// ones, ALL_PROXY for either; lower-case names win,
  and HTTP_PROXY is ignored in a CGI environment (the standard library's `getproxies_environment`). A proxy
  is an http:// URL, its credentials sent as `Proxy-Authorization: Basic`; an https:// or socks proxy is a
  ConfigError, never a call that quietly goes another way.
- NO_PROXY (hosts called directly): `*`, host names (`example.com` covers its subdomains; `.example.com`
  is the same), `host:port`, IP addresses and CIDRs (`10.0.0.0/8`), which, as with curl, are compared with
  hosts written as addresses only: a name is not resolved to be compared.
- The trust store: httpx's (certifi's roots, or SSL_CERT_FILE / SSL_CERT_DIR when set), with
  `[outbound] ca_bundle` trusted beside it: one TLS context for every call out, made once.

Timeouts stay with each kind of call (a route's, `[webhooks]`, `[tools]`): a tunnel through a proxy is part
of connecting and counts against the connect timeout.
"""

from __future__ import annotations

import base64
import functools
import ipaddress
import ssl
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from .config_errors import ConfigError
from .sections import OutboundSettings
from .settings import ROOT_DIR

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
#: how urllib reads NO_PROXY's names, domains and host:port entries. Not in the documentation (nor in
#: typeshed): tests/test_outbound.py pins what it answers, so a change in a Python release fails there
_bypass_by_name: Callable[[str, dict[str, str]], bool]
_bypass_by_name = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class Proxy:
    """An HTTP proxy: where to connect, and what to tell it."""

    host: str
    port: int
    #: the Proxy-Authorization value, when the URL carries a user name
    authorization: str | None
    #: the URL as configured, credentials included (what httpx is given); kept out of reprs
    url: str = field(repr=False)

    @property
    def shown(self) -> str:
        """The proxy in messages and logs: its address, never its credentials."""
        literal = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{literal}:{self.port}"


class Outbound:
    """The proxies and the trust store of this process's calls out."""

    def __init__(
        self,
        proxies: dict[str, Proxy] | None = None,
        no_proxy: str = "",
        ca_bundle: Path | None = None,
    ) -> None:
        #: scheme of the URL called ("http", "https") -> its proxy
        self.proxies = proxies or {}
        self.no_proxy = no_proxy
        self.ca_bundle = ca_bundle
        entries = [entry.strip() for entry in no_proxy.split(",") if entry.strip()]
        self._everything = "*" in entries
        self._networks = [network for entry in entries if (network := _network(entry)) is not None]

    @classmethod
    def from_environment(cls, ca_bundle: Path | None = None) -> Outbound:
        """The proxies of the environment as it is now (what a process reads when it starts)."""
        found = urllib.request.getproxies_environment()
        proxies = {}
        for scheme in ("http", "https"):
            key = scheme if found.get(scheme) else "all"
            if found.get(key):
                proxies[scheme] = parse_proxy(found[key], f"{key.upper()}_PROXY")
        return cls(proxies, found.get("no", ""), ca_bundle)

    @classmethod
    def from_settings(cls, settings: OutboundSettings) -> Outbound:
        """The environment's proxies and `[outbound]`; a CA bundle that cannot be read is a ConfigError."""
        bundle = ROOT_DIR / settings.ca_bundle if settings.ca_bundle else None
        outbound = cls.from_environment(bundle)
        if bundle is not None:
            outbound.tls  # noqa: B018  # made now: a bad file stops the start, not the first call
        return outbound

    def proxy_for(self, scheme: str, host: str, port: int) -> Proxy | None:
        """The proxy a call to scheme://host:port goes through, or None to connect to it directly."""
        proxy = self.proxies.get(scheme)
        if proxy is None or self._bypassed(host, port):
            return None
        return proxy

    def _bypassed(self, host: str, port: int) -> bool:
        if self._everything:
            return True
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            pass
        else:
            if any(address in network for network in self._networks):
                return True
        literal = f"[{host}]" if ":" in host else host
        return _bypass_by_name(f"{literal}:{port}", {"no": self.no_proxy})

    def tls_for(self, scheme: str) -> ssl.SSLContext:
        """What an httpx client of a `scheme` URL is given: `tls`, or for http a context made once that
        nothing uses (httpx would make one per client for verify=False: 5 % of a worker's CPU per webhook
        delivery to plain-http receivers, measured by the bench)."""
        return self.tls if scheme == "https" else _unused_tls()

    @functools.cached_property
    def tls(self) -> ssl.SSLContext:
        """The context of every TLS connection out (made on first use: loading the roots takes ~20 ms)."""
        context = httpx.create_ssl_context()
        if self.ca_bundle is not None:
            try:
                context.load_verify_locations(cafile=self.ca_bundle)
            except (OSError, ssl.SSLError) as exc:
                message = f"server.toml [outbound] ca_bundle: cannot load {self.ca_bundle}: {exc}"
                raise ConfigError(message) from None
        return context


@functools.cache
def _unused_tls() -> ssl.SSLContext:
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def _network(entry: str) -> Network | None:
    """A NO_PROXY entry as addresses (an address or a CIDR, IPv6 ones bracketed or not), else None."""
    try:
        return ipaddress.ip_network(entry.replace("[", "").replace("]", ""), strict=False)
    except ValueError:
        return None


def parse_proxy(value: str, variable: str) -> Proxy:
    """A proxy URL (`http://user:pass@proxy:3128`, or `proxy:3128` as curl and httpx take it)."""
    url = value if "://" in value else f"http://{value}"
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port or 80
    except ValueError:  # a port that is no number, a bracket left open
        raise ConfigError(f"{variable} is not a proxy URL (http://host:port)") from None
    if parts.scheme.lower() != "http":
        raise ConfigError(
            f"{variable} names a {parts.scheme}:// proxy: only http:// proxies are supported "
            "(https to the origin goes through them in a CONNECT tunnel)"
        )
    if not parts.hostname:
        raise ConfigError(f"{variable} is not a proxy URL with a host (http://host:port)")
    authorization = None
    if parts.username is not None:
        user = urllib.parse.unquote(parts.username)
        password = urllib.parse.unquote(parts.password or "")
        token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        authorization = f"Basic {token}"
    return Proxy(parts.hostname, port, authorization, url)
