"""Which webhook URIs we may call: the URI's shape, then every address its host resolves to.

A webhook makes the server send a request on a user's behalf, so a URI that reaches the server's own network
(loopback, private ranges, link-local, the cloud metadata service) would let any tenant probe or call what
only the server can see. URIs are checked when a webhook is saved and again before each delivery, on the
addresses DNS gives at that moment, and the delivery connects to exactly the addresses that were checked
(`CheckedUri.addresses`), so a name cannot resolve to a public address for the check and to a private one
for the connection. An allow-list (CIDRs and host names) lets local development and tests use loopback.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

from ..errors import InvalidArgument

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
#: (host, port) -> the IP addresses it resolves to, as text
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]

#: longer URIs are refused: 2048 is the common practical limit of URLs (browsers, proxies, CDNs), far more
#: than any receiver's endpoint needs, and it bounds what a webhook record stores
MAX_URI_LENGTH = 2048
RESOLVE_TIMEOUT_SECONDS = 5.0

_METADATA = "the cloud metadata address"
#: checked in order, the first match names the refusal: the metadata addresses before the ranges holding them
_REFUSED: list[tuple[str, str]] = [
    ("169.254.169.254/32", f"{_METADATA} (AWS, GCP, Azure, OpenStack)"),
    ("fd00:ec2::254/128", f"{_METADATA} (AWS, over IPv6)"),
    ("192.0.0.192/32", f"{_METADATA} (Oracle Cloud)"),
    ("100.100.100.200/32", f"{_METADATA} (Alibaba Cloud)"),
    ("0.0.0.0/8", "an unspecified address"),
    ("127.0.0.0/8", "a loopback address"),
    ("10.0.0.0/8", "a private address"),
    ("172.16.0.0/12", "a private address"),
    ("192.168.0.0/16", "a private address"),
    ("100.64.0.0/10", "a shared (carrier-grade NAT) address"),
    ("169.254.0.0/16", "a link-local address"),
    ("224.0.0.0/4", "a multicast address"),
    ("240.0.0.0/4", "a reserved address"),  # with 255.255.255.255, the broadcast address
    ("192.0.0.0/24", "a reserved address"),  # IETF protocol assignments
    ("192.0.2.0/24", "a reserved address"),  # documentation (TEST-NET-1, -2, -3)
    ("198.51.100.0/24", "a reserved address"),
    ("203.0.113.0/24", "a reserved address"),
    ("198.18.0.0/15", "a reserved address"),  # benchmarking
    ("::/128", "an unspecified address"),
    ("::1/128", "a loopback address"),
    ("fc00::/7", "a private address"),  # unique local
    ("fe80::/10", "a link-local address"),
    ("fec0::/10", "a reserved address"),  # the deprecated site-local range
    ("ff00::/8", "a multicast address"),
    ("::/96", "a reserved address"),  # the deprecated IPv4-compatible form
    ("100::/64", "a reserved address"),  # discard-only
    ("2001::/32", "a reserved address"),  # Teredo: its client address is obfuscated, so not checkable
    ("2001:db8::/32", "a reserved address"),  # documentation
]
_REFUSED_NETWORKS = [(ipaddress.ip_network(cidr), kind) for cidr, kind in _REFUSED]
#: IPv6 forms that carry an IPv4 address: that address is what is reached, so it is what is checked
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class UriRefused(InvalidArgument):
    """A webhook URI we will not call; the message names the host (when there is one) and why. The API
    answers it as any InvalidArgument: a 400 naming the field `uri`."""

    def __init__(self, reason: str, host: str = "") -> None:
        self.host = host
        self.reason = reason
        message = f"the webhook uri's host {host} {reason}" if host else f"the webhook uri {reason}"
        super().__init__(message, "uri")


class HostNotResolved(UriRefused):
    """The host name did not resolve (or not in time): at delivery time a failed attempt worth retrying."""


@dataclass(frozen=True, slots=True)
class AllowList:
    """Addresses and host names exempt from the address checks (local development, tests)."""

    networks: tuple[Network, ...] = ()
    hosts: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AllowList:
        """Each entry a CIDR ("127.0.0.0/8"), an address ("::1"), or a host name ("receiver.test")."""
        networks: list[Network] = []
        hosts: set[str] = set()
        for entry in (entry.strip() for entry in entries):
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                hosts.add(_normal_host(entry))
        return cls(tuple(networks), frozenset(hosts))

    def allows(self, address: IPAddress) -> bool:
        return any(address in network for network in self.networks)


#: no exceptions: what production runs with
STRICT = AllowList()


@dataclass(frozen=True, slots=True)
class CheckedUri:
    """A URI that passed the checks, and the addresses that passed with it (connect to one of these)."""

    uri: str
    scheme: str
    #: the host name (IDNA-encoded, lower case) or address literal: what SNI and certificates are checked for
    host: str
    port: int
    #: what the Host header carries
    authority: str
    #: the path and query, as the request line carries them
    target: str
    addresses: tuple[str, ...]

    def url_for(self, address: str) -> str:
        """The URI with its host replaced by one of its checked addresses."""
        literal = f"[{address.replace('%', '%25')}]" if ":" in address else address
        return f"{self.scheme}://{literal}:{self.port}{self.target}"


@dataclass(frozen=True, slots=True)
class _Parsed:
    scheme: str
    host: str
    port: int
    authority: str
    target: str


def parse_uri(uri: str) -> _Parsed:
    """The URI's shape alone (no DNS): http(s), a host, no userinfo, a port in range, a bounded length."""
    if len(uri) > MAX_URI_LENGTH:
        raise UriRefused(f"is longer than {MAX_URI_LENGTH} characters")
    if any(ord(char) <= 32 or ord(char) == 127 for char in uri):
        raise UriRefused("holds whitespace or control characters")
    try:
        parts = urllib.parse.urlsplit(uri)
    except ValueError:
        # urlsplit's own refusal of a bracket left open or closed without an IPv6 address in it
        raise UriRefused(f"has a malformed host: {_BRACKETS}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise UriRefused(f"must be http:// or https://, not {scheme + ':' if scheme else 'scheme-less'}")
    if "@" in parts.netloc:
        raise UriRefused("must not carry a user name or password")
    host, explicit = _authority(parts.netloc)
    port = explicit or (443 if scheme == "https" else 80)
    literal = f"[{host}]" if ":" in host else host
    authority = f"{literal}:{explicit}" if explicit else literal
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return _Parsed(scheme, host, port, authority, target)


_BRACKETS = "an IPv6 address is written whole, in brackets, as in http://[2001:db8::1]:8080/"
#: a host name as DNS knows it, once IDNA-encoded: dot-separated labels of letters, digits, `-` and `_`
_HOST_NAME = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*")
_BRACKETED = re.compile(r"\[([^\[\]]*)\](?::([^:]*))?")


def _authority(netloc: str) -> tuple[str, int | None]:
    """The host (normalised) and the explicit port (None: the scheme's) of a URI's authority, whole: what
    urlsplit lets through (text after a bracket, two colons, a port that is no number) is refused here."""
    bracketed = _BRACKETED.fullmatch(netloc) if netloc.startswith("[") else None
    if bracketed is not None:
        host, port = bracketed.group(1).lower(), bracketed.group(2) or ""
        if "%" in host or not _is_ipv6(host):
            raise UriRefused(f"has a malformed host: [{host}] is not an IPv6 address ({_BRACKETS})")
    elif "[" in netloc or "]" in netloc or netloc.count(":") > 1:
        raise UriRefused(f"has a malformed host: {_BRACKETS}")
    else:
        name, _, port = netloc.partition(":")
        if not name:
            raise UriRefused("has no host")
        host = _normal_host(name)
        if not _HOST_NAME.fullmatch(host):
            raise UriRefused("is not a valid host name", host)
    if not port:
        return host, None
    if not port.isascii() or not port.isdigit():
        raise UriRefused(f"has a port that is not a number ({port!r})", host)
    number = int(port)
    if not 0 < number < 65536:
        raise UriRefused("has a port out of range", host)
    return host, number


def _is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _normal_host(host: str) -> str:
    """Lower case, no trailing dot, IDNA-encoded (what DNS and certificates use)."""
    host = host.strip().rstrip(".").lower()
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        raise UriRefused("is not a valid host name", host) from None


def refusal(address: IPAddress) -> str | None:
    """Why an address may not be called (None: it may): "a private address", "an IPv4-mapped form of..."."""
    form, embedded = _embedded_ipv4(address)
    if embedded is not None:
        inner = refusal(embedded)
        return f"{form} of {embedded}, {inner}" if inner else None
    for network, kind in _REFUSED_NETWORKS:
        if address.version == network.version and address in network:
            return kind
    return None


def _embedded_ipv4(address: IPAddress) -> tuple[str, ipaddress.IPv4Address | None]:
    """The IPv4 address an IPv6 one stands for, and the form's name: IPv4-mapped (::ffff:a.b.c.d), NAT64
    (64:ff9b::a.b.c.d), 6to4 (2002:aabb:ccdd::)."""
    if not isinstance(address, ipaddress.IPv6Address):
        return "", None
    if address.ipv4_mapped is not None:
        return "an IPv4-mapped form", address.ipv4_mapped
    if address in _NAT64:
        return "a NAT64 form", ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return "a 6to4 form", address.sixtofour


async def system_resolver(host: str, port: int) -> list[str]:
    """The addresses the system's resolver gives for a TCP connection to (host, port)."""
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def check_uri(
    uri: str,
    allow: AllowList = STRICT,
    resolver: Resolver = system_resolver,
    resolve_timeout: float = RESOLVE_TIMEOUT_SECONDS,
) -> CheckedUri:
    """The URI and the addresses it may be called at, or `UriRefused` (`HostNotResolved` for DNS)."""
    parsed = parse_uri(uri)
    literal = _literal(parsed.host)
    addresses = [literal] if literal is not None else await _resolve(parsed, resolver, resolve_timeout)
    if parsed.host not in allow.hosts:
        for address in addresses:
            reason = refusal(address)
            if reason is not None and not allow.allows(address):
                said = "is" if literal is not None else f"resolves to {address},"
                raise UriRefused(f"{said} {reason}", parsed.host)
    return CheckedUri(
        uri, parsed.scheme, parsed.host, parsed.port, parsed.authority, parsed.target,
        tuple(str(address) for address in addresses),
    )  # fmt: skip


def _literal(host: str) -> IPAddress | None:
    """The host as an address when it is one (nothing to resolve)."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


async def _resolve(parsed: _Parsed, resolver: Resolver, within: float) -> list[IPAddress]:
    try:
        async with asyncio.timeout(within):
            answers = await resolver(parsed.host, parsed.port)
    except TimeoutError:
        raise HostNotResolved(f"did not resolve within {within:g} s", parsed.host) from None
    except OSError as exc:  # socket.gaierror: no such name, no address, the resolver failed
        raise HostNotResolved(f"does not resolve ({exc.strerror or exc})", parsed.host) from None
    addresses = [ipaddress.ip_address(answer) for answer in dict.fromkeys(answers)]
    if not addresses:
        raise HostNotResolved("resolves to no address", parsed.host)
    return addresses
