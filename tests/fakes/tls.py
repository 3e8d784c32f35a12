"""A certificate authority of the tests' own, made with `cryptography`: its certificate is a CA bundle that
nothing else trusts, and the certificates it signs let a test server speak TLS under any host name.

EC P-256 keys, because they are made in well under a millisecond (an RSA key takes tens).
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_DAY = datetime.timedelta(days=1)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(
    subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _DAY)
        .not_valid_after(now + _DAY)
    )


def _alternative(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


class CertificateAuthority:
    """A CA whose certificate is at `bundle` (PEM): `server_tls(names)` serves under those names, and so do
    the files `issue(names)` writes."""

    def __init__(self, where: Path, name: str = "interaction-server tests CA") -> None:
        self.where = where
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._name = _name(name)
        basic = x509.BasicConstraints(ca=True, path_length=0)
        usage = x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
            decipher_only=False,
        )  # fmt: skip
        certificate = (
            _builder(self._name, self._name, self._key)
            .add_extension(basic, critical=True)
            .add_extension(usage, critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        self._certificate = certificate
        self.bundle = where / "ca.pem"
        self.bundle.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))

    def server_tls(self, *names: str) -> ssl.SSLContext:
        """A server context whose certificate, signed by this CA, names `names` (host names or addresses)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*self.issue(*names))
        return context

    def issue(self, *names: str) -> tuple[Path, Path]:
        """The files of a certificate for `names` signed by this CA, and of its key (PEM both)."""
        key = ec.generate_private_key(ec.SECP256R1())
        identifier = x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key())
        certificate = (
            _builder(_name(names[0]), self._name, key)
            .add_extension(x509.SubjectAlternativeName([_alternative(n) for n in names]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(identifier, critical=False)
            .sign(self._key, hashes.SHA256())
        )
        stem = self.where / f"leaf-{certificate.serial_number:x}"
        chain, private = stem.with_suffix(".pem"), stem.with_suffix(".key")
        chain.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        private.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        return chain, private
