"""Which webhook URIs are refused (`server/webhooks/addresses.py`): shapes, every refused class of address,
their IPv6 disguises, names resolved by a resolver the test answers for, and the allow-list."""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Sequence

import pytest

from server.webhooks.addresses import (
    MAX_URI_LENGTH,
    AllowList,
    HostNotResolved,
    UriRefused,
    check_uri,
    parse_uri,
    refusal,
    system_resolver,
)


class Answers:
    """A resolver that gives the same addresses for any name, and remembers what it was asked."""

    def __init__(self, *addresses: str) -> None:
        self.addresses = addresses
        self.asked: list[tuple[str, int]] = []

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        self.asked.append((host, port))
        return self.addresses


REFUSED = [
    ("127.0.0.1", "a loopback address"),
    ("127.8.9.10", "a loopback address"),
    ("::1", "a loopback address"),
    ("10.0.0.5", "a private address"),
    ("172.16.0.1", "a private address"),
    ("172.31.255.255", "a private address"),
    ("192.168.1.1", "a private address"),
    ("fc00::1", "a private address"),
    ("fd12:3456::1", "a private address"),
    ("169.254.1.1", "a link-local address"),
    ("fe80::1", "a link-local address"),
    ("169.254.169.254", "the cloud metadata address (AWS, GCP, Azure, OpenStack)"),
    ("fd00:ec2::254", "the cloud metadata address (AWS, over IPv6)"),
    ("192.0.0.192", "the cloud metadata address (Oracle Cloud)"),
    ("100.100.100.200", "the cloud metadata address (Alibaba Cloud)"),
    ("0.0.0.0", "an unspecified address"),
    ("::", "an unspecified address"),
    ("224.0.0.1", "a multicast address"),
    ("ff02::1", "a multicast address"),
    ("240.0.0.1", "a reserved address"),
    ("255.255.255.255", "a reserved address"),
    ("198.18.0.1", "a reserved address"),
    ("2001:db8::1", "a reserved address"),
    ("100.64.0.1", "a shared (carrier-grade NAT) address"),
    ("100.127.255.254", "a shared (carrier-grade NAT) address"),
]


@pytest.mark.parametrize(("address", "kind"), REFUSED)
async def test_every_refused_class_is_refused_as_a_literal_and_as_a_name(address: str, kind: str) -> None:
    assert refusal(ipaddress.ip_address(address)) == kind
    literal = f"[{address}]" if ":" in address else address
    with pytest.raises(UriRefused) as literal_refused:
        await check_uri(f"https://{literal}/hook")
    assert literal_refused.value.message == f"the webhook uri's host {address} is {kind}"
    with pytest.raises(UriRefused) as named_refused:
        await check_uri("https://receiver.example/hook", resolver=Answers(address))
    expected = f"the webhook uri's host receiver.example resolves to {address}, {kind}"
    assert named_refused.value.message == expected
    assert (named_refused.value.field, named_refused.value.host) == ("uri", "receiver.example")


@pytest.mark.parametrize(
    ("address", "form", "inner", "kind"),
    [
        ("::ffff:10.0.0.5", "an IPv4-mapped form", "10.0.0.5", "a private address"),
        ("::ffff:127.0.0.1", "an IPv4-mapped form", "127.0.0.1", "a loopback address"),
        ("::ffff:169.254.169.254", "an IPv4-mapped form", "169.254.169.254", "the cloud metadata address"),
        ("64:ff9b::a00:5", "a NAT64 form", "10.0.0.5", "a private address"),
        ("2002:7f00:1::", "a 6to4 form", "127.0.0.1", "a loopback address"),
    ],
)
async def test_ipv6_forms_of_ipv4_addresses_are_judged_by_the_ipv4_address(
    address: str, form: str, inner: str, kind: str
) -> None:
    with pytest.raises(UriRefused, match=re.escape(f"is {form} of {inner}, {kind}")):
        await check_uri(f"http://[{address}]:8080/")
    assert refusal(ipaddress.ip_address("::ffff:8.8.8.8")) is None


async def test_a_public_address_passes_and_is_what_the_caller_connects_to() -> None:
    resolve = Answers("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c", "93.184.215.14")
    checked = await check_uri("https://Receiver.Example.:8443/a/b?c=d#frag", resolver=resolve)
    assert resolve.asked == [("receiver.example", 8443)]
    assert checked.addresses == ("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c")
    assert (checked.scheme, checked.host, checked.port) == ("https", "receiver.example", 8443)
    assert (checked.authority, checked.target) == ("receiver.example:8443", "/a/b?c=d")
    assert checked.url_for("2606:2800:21f:cb07:6820:80da:af6b:8b2c") == (
        "https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:8443/a/b?c=d"
    )
    plain = await check_uri("http://8.8.8.8")
    assert (plain.port, plain.authority, plain.target, plain.addresses) == (80, "8.8.8.8", "/", ("8.8.8.8",))


async def test_one_refused_address_among_public_ones_refuses_the_uri() -> None:
    # a name that also resolves to a private address could be connected there: all of them must pass
    with pytest.raises(UriRefused, match=re.escape("resolves to 10.1.2.3, a private address")):
        await check_uri("https://receiver.example/", resolver=Answers("8.8.8.8", "10.1.2.3"))


async def test_the_system_resolver_sees_localhost_as_loopback() -> None:
    assert "127.0.0.1" in await system_resolver("localhost", 80)
    with pytest.raises(
        UriRefused, match=r"host localhost resolves to (127\.0\.0\.1|::1), a loopback address"
    ):
        await check_uri("http://localhost:9000/hook")
    # inet_aton's shorthand reaches loopback too: the answer is checked, not the spelling
    with pytest.raises(UriRefused, match=re.escape("host 0x7f.1 resolves to 127.0.0.1, a loopback address")):
        await check_uri("http://0x7f.1/hook")


async def test_the_allow_list_accepts_loopback_by_address_or_by_host_name() -> None:
    by_network = AllowList.parse(["127.0.0.0/8", "::1"])
    checked = await check_uri("http://127.0.0.1:9000/hook", by_network)
    assert checked.addresses == ("127.0.0.1",)
    assert (await check_uri("http://[::1]:9000/", by_network)).addresses == ("::1",)
    with pytest.raises(UriRefused, match=re.escape("10.0.0.1 is a private address")):
        await check_uri("http://10.0.0.1/", by_network)
    by_host = AllowList.parse([" Receiver.Test "])
    resolve = Answers("127.0.0.1", "10.9.9.9")
    checked = await check_uri("http://receiver.test:81/", by_host, resolver=resolve)
    assert checked.addresses == ("127.0.0.1", "10.9.9.9")
    with pytest.raises(UriRefused, match=re.escape("other.test resolves to 127.0.0.1")):
        await check_uri("http://other.test/", by_host, resolver=resolve)


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("ftp://receiver.example/x", "the webhook uri must be http:// or https://, not ftp:"),
        ("file:///etc/passwd", "the webhook uri must be http:// or https://, not file:"),
        ("gopher://127.0.0.1:6379/_", "the webhook uri must be http:// or https://, not gopher:"),
        ("receiver.example/x", "the webhook uri must be http:// or https://, not scheme-less"),
        ("https://user:pass@receiver.example/", "the webhook uri must not carry a user name or password"),
        ("https://user@receiver.example/", "the webhook uri must not carry a user name or password"),
        ("https:///path", "the webhook uri has no host"),
        ("https://receiver.example:0/", "the webhook uri's host receiver.example has a port out of range"),
        (
            "https://receiver.example:65536/",
            "the webhook uri's host receiver.example has a port out of range",
        ),
        ("https://receiver.example/a b", "the webhook uri holds whitespace or control characters"),
        ("https://receiver.example/\r\nx: y", "the webhook uri holds whitespace or control characters"),
    ],
)
async def test_uris_of_the_wrong_shape_are_refused_before_any_lookup(uri: str, message: str) -> None:
    resolve = Answers("8.8.8.8")
    with pytest.raises(UriRefused) as refused:
        await check_uri(uri, resolver=resolve)
    assert refused.value.message == message and refused.value.field == "uri"
    assert resolve.asked == []


MALFORMED_HOST = "has a malformed host"


@pytest.mark.parametrize(
    ("uri", "reason"),
    [
        ("http://[::1/", MALFORMED_HOST),
        ("http://[::1", MALFORMED_HOST),
        ("http://[zz]/", MALFORMED_HOST),
        ("http://[]/", MALFORMED_HOST),
        ("http://[1.2.3.4]/", MALFORMED_HOST),
        ("http://[v1.x]/", "[v1.x] is not an IPv6 address"),
        ("http://[fe80::1%25eth0]/", "is not an IPv6 address"),
        ("http://[::1]]/", MALFORMED_HOST),
        ("http://[::1]x/", MALFORMED_HOST),
        ("http://a]b/", MALFORMED_HOST),
        ("http://::1/", MALFORMED_HOST),
        ("http://[::1]:80:80/", MALFORMED_HOST),
        ("http://host:99999/", "has a port out of range"),
        ("http://host:-1/", "has a port that is not a number ('-1')"),
        ("http://host:8a/", "has a port that is not a number ('8a')"),
        ("http://host:\u0661\u0662/", "has a port that is not a number"),
        ("http://:80/", "has no host"),
        ("http://%zz/", "is not a valid host name"),
        ("http://a..b/", "is not a valid host name"),
        ("http://a$b.example/", "is not a valid host name"),
        ("http://" + "a" * 64 + ".example/", "is not a valid host name"),
    ],
)
async def test_malformed_uris_are_refused_not_raised(uri: str, reason: str) -> None:
    """Whatever urlsplit raises or lets through in an authority is a refusal naming `uri` (a 400),
    never a ValueError (a 500), and nothing is looked up."""
    resolve = Answers("8.8.8.8")
    with pytest.raises(UriRefused) as refused:
        await check_uri(uri, resolver=resolve)
    assert reason in refused.value.reason and refused.value.field == "uri"
    assert resolve.asked == []


@pytest.mark.parametrize(
    ("uri", "host", "port", "authority"),
    [
        ("http://[2001:db8::1]:8080/x", "2001:db8::1", 8080, "[2001:db8::1]:8080"),
        ("https://[2606:4700::1]/", "2606:4700::1", 443, "[2606:4700::1]"),
        ("http://receiver.example:/", "receiver.example", 80, "receiver.example"),
        ("https://Receiver.Example.:8443/", "receiver.example", 8443, "receiver.example:8443"),
        ("https://b\u00fccher.example/", "xn--bcher-kva.example", 443, "xn--bcher-kva.example"),
        ("http://under_score.example/", "under_score.example", 80, "under_score.example"),
    ],
)
def test_well_formed_authorities_still_parse(uri: str, host: str, port: int, authority: str) -> None:
    parsed = parse_uri(uri)
    assert (parsed.host, parsed.port, parsed.authority) == (host, port, authority)


async def test_the_length_bound() -> None:
    head = "https://receiver.example/"
    longest = head + "a" * (MAX_URI_LENGTH - len(head))
    assert (await check_uri(longest, resolver=Answers("8.8.8.8"))).target.endswith("a")
    with pytest.raises(UriRefused, match=f"longer than {MAX_URI_LENGTH} characters"):
        await check_uri(longest + "a", resolver=Answers("8.8.8.8"))


async def test_names_that_do_not_resolve_or_not_in_time_are_told_apart() -> None:
    async def no_such_name(host: str, port: int) -> Sequence[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    async def never(host: str, port: int) -> Sequence[str]:
        await asyncio.sleep(10)
        return []

    with pytest.raises(
        HostNotResolved, match=r"host gone.example does not resolve \(Name or service not known\)"
    ):
        await check_uri("https://gone.example/", resolver=no_such_name)
    with pytest.raises(HostNotResolved, match=re.escape("host slow.example did not resolve within 0.05 s")):
        await check_uri("https://slow.example/", resolver=never, resolve_timeout=0.05)
    with pytest.raises(HostNotResolved, match=re.escape("resolves to no address")):
        await check_uri("https://empty.example/", resolver=Answers())
