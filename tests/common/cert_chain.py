"""Certificates signed by a test CA beyond what dra-migrate issues itself (its CA signs serving
leaves directly): intermediate CAs for tests of served chains, and client certificates for tests of
`--client-ca`."""

from __future__ import annotations

import datetime as dt

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from dra_migrate.certs.generate import CertifiedKey, PrivateKey


def signed(
    issuer: CertifiedKey,
    common_name: str,
    usage: x509.BasicConstraints | x509.ExtendedKeyUsage,
    *,
    not_before: dt.datetime,
    not_after: dt.datetime,
    key: PrivateKey | None = None,
) -> CertifiedKey:
    """A certificate for `common_name` signed by `issuer`, with one extension saying what it is for
    (critical when it makes a CA, as RFC 5280 asks of basic constraints)."""
    key = key or ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(issuer.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(usage, critical=isinstance(usage, x509.BasicConstraints))
        .sign(issuer.key, hashes.SHA256())
    )
    return CertifiedKey(cert, key)


def intermediate(
    root: CertifiedKey,
    common_name: str,
    *,
    not_before: dt.datetime,
    not_after: dt.datetime,
    key: PrivateKey | None = None,
) -> CertifiedKey:
    """A CA certificate signed by `root`; pass the `key` of another one to give the same CA another
    validity (as an old and a renewed intermediate are)."""
    ca = x509.BasicConstraints(ca=True, path_length=0)
    return signed(root, common_name, ca, not_before=not_before, not_after=not_after, key=key)


def client_certificate(ca: CertifiedKey, common_name: str) -> CertifiedKey:
    """A client certificate (TLS client authentication) valid from five minutes ago for a day."""
    now = dt.datetime.now(dt.UTC)
    usage = x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH])
    start, end = now - dt.timedelta(minutes=5), now + dt.timedelta(days=1)
    return signed(ca, common_name, usage, not_before=start, not_after=end)
