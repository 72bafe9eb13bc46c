"""Intermediate CA certificates for tests of served chains (dra-migrate's own CA signs leaves directly)."""

from __future__ import annotations

import datetime as dt

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from dra_migrate.certs.generate import CertifiedKey, PrivateKey


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
    key = key or ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(root.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(root.key, hashes.SHA256())
    )
    return CertifiedKey(cert, key)
