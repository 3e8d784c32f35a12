"""The rules of a call out (`server/outbound.py`): which proxy the environment gives a URL, what NO_PROXY
exempts (as curl and httpx read it), and the trust store with `[outbound] ca_bundle`. No network."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from server.config_errors import ConfigError
from server.outbound import Outbound, parse_proxy
from server.sections import OutboundSettings
from tests.fakes.proxy import without_proxies
from tests.fakes.tls import CertificateAuthority


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy of the machine the tests run on (nor a CGI request's method)."""
    without_proxies(monkeypatch).delenv("REQUEST_METHOD", raising=False)


def where(outbound: Outbound, url: str) -> str | None:
    """The proxy (as shown) a URL goes through, or None for a direct call."""
    scheme, _, rest = url.partition("://")
    host, _, port = rest.rpartition(":")
    proxy = outbound.proxy_for(scheme, host.strip("[]"), int(port))
    return None if proxy is None else proxy.shown


def test_each_scheme_has_its_variable_and_all_proxy_covers_the_other(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://secure.proxy:3128")
    monkeypatch.setenv("ALL_PROXY", "http://any.proxy:8080")
    outbound = Outbound.from_environment()
    assert where(outbound, "https://api.test:443") == "http://secure.proxy:3128"
    assert where(outbound, "http://api.test:80") == "http://any.proxy:8080"
    monkeypatch.delenv("ALL_PROXY")
    assert where(Outbound.from_environment(), "http://api.test:80") is None


def test_lower_case_names_win_and_a_scheme_less_proxy_is_http(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://upper.proxy:1")
    monkeypatch.setenv("http_proxy", "lower.proxy:2")
    assert where(Outbound.from_environment(), "http://api.test:80") == "http://lower.proxy:2"
    # a CGI environment: HTTP_PROXY may be a client's `Proxy:` header (httpoxy), so it is not read
    monkeypatch.delenv("http_proxy")
    monkeypatch.setenv("REQUEST_METHOD", "GET")
    assert where(Outbound.from_environment(), "http://api.test:80") is None


@pytest.mark.parametrize(
    ("no_proxy", "direct", "proxied"),
    [
        ("*", ["https://api.test:443", "https://10.0.0.1:443"], []),
        ("localhost, *", ["https://api.test:443"], []),
        (
            "example.com",
            ["https://example.com:443", "https://a.b.example.com:443"],
            ["https://notexample.com:443"],
        ),
        (
            ".example.com",
            ["https://example.com:443", "https://a.example.com:443"],
            ["https://example.org:443"],
        ),
        ("EXAMPLE.com", ["https://api.example.com:443"], []),
        ("api.test:8443", ["https://api.test:8443"], ["https://api.test:443"]),
        (
            "10.0.0.0/8,192.168.1.7",
            ["https://10.1.2.3:443", "https://192.168.1.7:1"],
            ["https://192.168.1.8:443"],
        ),
        (
            "::1,[fd00::]/8,fe80::/10",
            ["https://[::1]:443", "https://[fd12::5]:443", "https://[fe80::1]:443"],
            ["https://[2001:db8::1]:443"],
        ),
        # an address range covers hosts written as addresses, not names that resolve into it (curl's rule)
        ("127.0.0.0/8", ["https://127.0.0.1:8000"], ["https://localhost:8000"]),
        ("", [], ["https://api.test:443"]),
    ],
)
def test_no_proxy(
    monkeypatch: pytest.MonkeyPatch, no_proxy: str, direct: list[str], proxied: list[str]
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.test:3128")
    monkeypatch.setenv("NO_PROXY", no_proxy)
    outbound = Outbound.from_environment()
    assert [url for url in direct if where(outbound, url) is not None] == []
    assert [url for url in proxied if where(outbound, url) is None] == []


def test_credentials_become_basic_authorization_and_are_never_shown() -> None:
    proxy = parse_proxy("http://us%40er:p%3Ass@proxy.test:3128", "HTTPS_PROXY")
    assert proxy.authorization == "Basic dXNAZXI6cDpzcw=="  # base64 of "us@er:p:ss"
    assert (proxy.host, proxy.port, proxy.shown) == ("proxy.test", 3128, "http://proxy.test:3128")
    assert "p%3Ass" not in repr(proxy) and "p:ss" not in repr(proxy)
    assert parse_proxy("http://proxy.test", "HTTP_PROXY").port == 80
    assert parse_proxy("http://[::1]:3128", "HTTP_PROXY").shown == "http://[::1]:3128"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("socks5://user:secret@proxy.test:1080", "HTTPS_PROXY names a socks5:// proxy: only http://"),
        ("https://proxy.test:443", "HTTPS_PROXY names a https:// proxy: only http://"),
        ("http://proxy.test:port", "HTTPS_PROXY is not a proxy URL"),
        ("http://:3128", "HTTPS_PROXY is not a proxy URL with a host"),
    ],
)
def test_a_proxy_that_cannot_be_used_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: str
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", value)
    with pytest.raises(ConfigError, match=expected) as caught:
        Outbound.from_environment()
    assert "secret" not in str(caught.value)


def test_the_ca_bundle_is_trusted_beside_the_default_roots(tmp_path: Path) -> None:
    authority = CertificateAuthority(tmp_path)
    default = Outbound().tls
    bundled = Outbound.from_settings(OutboundSettings(ca_bundle=str(authority.bundle)))
    assert bundled.tls.cert_store_stats()["x509_ca"] == default.cert_store_stats()["x509_ca"] + 1
    assert bundled.tls.verify_mode == ssl.CERT_REQUIRED and bundled.tls.check_hostname
    assert bundled.tls is bundled.tls  # made once


def test_a_ca_bundle_that_cannot_be_read_stops_the_start(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\[outbound\] ca_bundle: cannot load .*missing.pem"):
        Outbound.from_settings(OutboundSettings(ca_bundle=str(tmp_path / "missing.pem")))
    (tmp_path / "junk.pem").write_text("not a certificate")
    with pytest.raises(ConfigError, match="ca_bundle: cannot load"):
        Outbound.from_settings(OutboundSettings(ca_bundle=str(tmp_path / "junk.pem")))
