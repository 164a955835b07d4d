"""TLS for brokered hosts: a per-engine CA whose leaf certificates the proxy presents.

The proxy terminates TLS only for hosts a credential applies to, so it can put the real
credential into the request. Boxes trust this CA (its certificate is mounted into them and
named by the usual variables); its private key never leaves this process's memory, and leaf
keys live in a directory only golem's user can read, which no box sees.
"""

from __future__ import annotations

import datetime
import ipaddress
import shutil
import ssl
import tempfile
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from golem.core.network import address_literal

__all__ = ["EgressCA", "upstream_context"]

CA_LIFETIME = datetime.timedelta(days=30)
LEAF_LIFETIME = datetime.timedelta(days=7)
BACKDATE = datetime.timedelta(hours=1)


_CA_KEY_USAGE = x509.KeyUsage(
    digital_signature=True,
    key_cert_sign=True,
    crl_sign=True,
    content_commitment=False,
    key_encipherment=False,
    data_encipherment=False,
    key_agreement=False,
    encipher_only=False,
    decipher_only=False,
)


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "golem"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name[:64]),
        ]
    )


class EgressCA:
    """A CA made when the engine first needs one; ``server_context(host)`` for each host."""

    def __init__(self) -> None:
        now = datetime.datetime.now(datetime.UTC)
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._leaf_key = ec.generate_private_key(ec.SECP256R1())
        subject = _name("golem egress CA")
        self.certificate = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE)
            .not_valid_after(now + CA_LIFETIME)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(_CA_KEY_USAGE, critical=True)
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False
            )
            .sign(self._key, hashes.SHA256())
        )
        self._private_dir = Path(tempfile.mkdtemp(prefix="golem-egress-ca-"))  # mode 0700
        self._contexts: dict[str, ssl.SSLContext] = {}

    @property
    def pem(self) -> bytes:
        """The CA certificate, for the boxes' trust stores."""
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    def server_context(self, host: str) -> ssl.SSLContext:
        """A TLS server context presenting a certificate for ``host`` (cached per host)."""
        name = host.lower().rstrip(".")
        context = self._contexts.get(name)
        if context is None:
            context = self._make_context(name)
            self._contexts[name] = context
        return context

    def _make_context(self, host: str) -> ssl.SSLContext:
        chain = self._private_dir / f"leaf-{len(self._contexts)}.pem"
        chain.write_bytes(self._leaf_pem(host) + self.pem)
        key = self._private_dir / "leaf-key.pem"
        if not key.exists():
            key.write_bytes(
                self._leaf_key.private_bytes(
                    serialization.Encoding.PEM,
                    serialization.PrivateFormat.PKCS8,
                    serialization.NoEncryption(),
                )
            )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.set_alpn_protocols(["http/1.1"])
        context.load_cert_chain(chain, key)
        return context

    def _leaf_pem(self, host: str) -> bytes:
        now = datetime.datetime.now(datetime.UTC)
        literal = address_literal(host)
        alt: x509.GeneralName = (
            x509.IPAddress(ipaddress.ip_address(literal)) if literal else x509.DNSName(host)
        )
        certificate = (
            x509.CertificateBuilder()
            .subject_name(_name(host))
            .issuer_name(self.certificate.subject)
            .public_key(self._leaf_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE)
            .not_valid_after(now + LEAF_LIFETIME)
            .add_extension(x509.SubjectAlternativeName([alt]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                critical=False,
            )
            .sign(self._key, hashes.SHA256())
        )
        return certificate.public_bytes(serialization.Encoding.PEM)

    def close(self) -> None:
        """Remove the leaf keys from disk."""
        shutil.rmtree(self._private_dir, ignore_errors=True)


def upstream_context(extra_ca: Path | None) -> ssl.SSLContext:
    """The context the proxy verifies brokered upstreams with: the system's CAs, plus
    ``extra_ca`` (an internal CA) when given."""
    context = ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])
    if extra_ca is not None:
        context.load_verify_locations(cafile=str(extra_ca))
    return context
