"""Create the webhook's CA and serving certificate.

Everything here is pure (objects in, objects out) except `write_bundle`, so the CLI,
tests and any future cert-manager-free installer share one tested code path.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import os
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TypeVar

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.types import PublicKeyTypes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_T = TypeVar("_T")

CA_VALIDITY = dt.timedelta(days=3650)
LEAF_VALIDITY = dt.timedelta(days=365)
# Nodes and the API server rarely agree on the time to the second; a freshly issued
# certificate must not be "not yet valid" anywhere.
CLOCK_SKEW = dt.timedelta(minutes=5)

CA_CERT_FILE = "ca.crt"
CA_KEY_FILE = "ca.key"
TLS_CERT_FILE = "tls.crt"
TLS_KEY_FILE = "tls.key"

# Service names are DNS-1035 labels, namespaces DNS-1123 labels; one pattern is strict
# enough for both because a namespace starting with a digit is vanishingly rare and the
# error message says what is wrong.
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS_LABEL = r"[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?"
# Extra names may be any hostname, or a wildcard for a local ingress-style setup.
_DNS_NAME = re.compile(rf"^(\*\.)?({_DNS_LABEL}\.)*{_DNS_LABEL}$")


class CertificateError(ValueError):
    """Invalid input: a bad name, an unusable CA, a key that does not match."""


class KeyType(StrEnum):
    ECDSA_P256 = "ecdsa-p256"
    RSA_2048 = "rsa-2048"
    RSA_3072 = "rsa-3072"


@dataclass(frozen=True)
class CertifiedKey:
    cert: x509.Certificate
    key: PrivateKey

    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def key_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )


@dataclass(frozen=True)
class Bundle:
    ca: CertifiedKey
    leaf: CertifiedKey

    @property
    def ca_bundle(self) -> str:
        """The `clientConfig.caBundle` value: base64 of the CA PEM, one line."""
        return base64.b64encode(self.ca.cert_pem()).decode("ascii")


def generate_private_key(key_type: KeyType) -> PrivateKey:
    match key_type:
        case KeyType.ECDSA_P256:
            return ec.generate_private_key(ec.SECP256R1())
        case KeyType.RSA_2048:
            return rsa.generate_private_key(public_exponent=65537, key_size=2048)
        case KeyType.RSA_3072:
            return rsa.generate_private_key(public_exponent=65537, key_size=3072)
    raise CertificateError(f"unsupported key type {key_type!r}")


def service_dns_names(service: str, namespace: str, cluster_domain: str = "cluster.local") -> list[str]:
    """The names the API server may use to reach `service` in `namespace`."""
    for what, value in (("service", service), ("namespace", namespace)):
        if not _LABEL.match(value):
            raise CertificateError(f"{what} {value!r} is not a valid DNS label")
    svc = f"{service}.{namespace}.svc"
    return [service, f"{service}.{namespace}", svc, f"{svc}.{cluster_domain}"]


def create_ca(
    *,
    common_name: str = "dra-migrate webhook CA",
    key_type: KeyType = KeyType.ECDSA_P256,
    validity: dt.timedelta = CA_VALIDITY,
    now: dt.datetime | None = None,
) -> CertifiedKey:
    key = generate_private_key(key_type)
    not_before, not_after = _validity_window(now, validity)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        # pathlen 0: this CA only ever signs serving certificates, never sub-CAs.
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(key_cert_sign=True, crl_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, _signature_hash(key))
    )
    return CertifiedKey(cert, key)


def issue_serving_cert(
    ca: CertifiedKey,
    *,
    service: str,
    namespace: str,
    extra_dns: Iterable[str] = (),
    ip_addresses: Iterable[IPAddress | str] = (),
    key_type: KeyType = KeyType.ECDSA_P256,
    validity: dt.timedelta = LEAF_VALIDITY,
    cluster_domain: str = "cluster.local",
    now: dt.datetime | None = None,
) -> CertifiedKey:
    dns_names = _unique([*service_dns_names(service, namespace, cluster_domain), *extra_dns])
    for dns_name in dns_names:
        if not _DNS_NAME.match(dns_name):
            raise CertificateError(f"{dns_name!r} is not a valid DNS name")
    ips = _unique([_parse_ip(ip) for ip in ip_addresses])
    key = generate_private_key(key_type)
    not_before, not_after = _validity_window(now, validity)
    # A leaf outliving its CA would be rejected by clients anyway; say so now instead.
    not_after = min(not_after, ca.cert.not_valid_after_utc)
    if not_after <= not_before:
        raise CertificateError("the CA certificate has expired")
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    sans += [x509.IPAddress(ip) for ip in ips]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_names[2])]))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            # RSA key exchange (TLS 1.2 without ECDHE) encrypts with the leaf key.
            _key_usage(digital_signature=True, key_encipherment=isinstance(key, rsa.RSAPrivateKey)),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(_authority_key_id(ca), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .sign(ca.key, _signature_hash(ca.key))
    )
    return CertifiedKey(cert, key)


def load_ca(cert_pem: bytes, key_pem: bytes, *, now: dt.datetime | None = None) -> CertifiedKey:
    """Parse an existing CA so a rotated leaf keeps the caBundle already deployed."""
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
    except ValueError as exc:
        raise CertificateError(f"CA certificate is not a PEM certificate ({exc})") from None
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError) as exc:
        raise CertificateError(f"CA key is not an unencrypted PEM private key ({exc})") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise CertificateError(f"CA key type {type(key).__name__} is not supported (use ECDSA or RSA)")
    if _spki(key.public_key()) != _spki(cert.public_key()):
        raise CertificateError("CA key does not match the CA certificate")
    try:
        is_ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        is_ca = False
    if not is_ca:
        raise CertificateError("CA certificate is not a CA (BasicConstraints ca=True missing)")
    if cert.not_valid_after_utc <= (now or _utcnow()):
        raise CertificateError(f"CA certificate expired on {cert.not_valid_after_utc:%Y-%m-%d}")
    return CertifiedKey(cert, key)


def create_bundle(
    *,
    service: str,
    namespace: str,
    extra_dns: Sequence[str] = (),
    ip_addresses: Sequence[IPAddress | str] = (),
    key_type: KeyType = KeyType.ECDSA_P256,
    leaf_validity: dt.timedelta = LEAF_VALIDITY,
    ca: CertifiedKey | None = None,
    now: dt.datetime | None = None,
) -> Bundle:
    """A serving certificate for the service, signed by `ca` or by a new CA."""
    service_dns_names(service, namespace)  # validate before the names go into a new CA's subject
    if ca is None:
        ca = create_ca(common_name=f"{service}.{namespace} webhook CA", key_type=key_type, now=now)
    leaf = issue_serving_cert(
        ca,
        service=service,
        namespace=namespace,
        extra_dns=extra_dns,
        ip_addresses=ip_addresses,
        key_type=key_type,
        validity=leaf_validity,
        now=now,
    )
    return Bundle(ca, leaf)


def write_bundle(bundle: Bundle, out_dir: Path, *, include_ca_key: bool = True) -> list[Path]:
    """Write the PEM files, each atomically; keys are 0600 from the moment they exist.

    The CA first and the leaf certificate last, so a server watching the directory
    sees a mismatched pair for at most the instant between the two leaf writes (and
    the reloader rejects that pair anyway).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    files = [(CA_CERT_FILE, bundle.ca.cert_pem(), 0o644)]
    if include_ca_key:
        files.append((CA_KEY_FILE, bundle.ca.key_pem(), 0o600))
    files += [(TLS_KEY_FILE, bundle.leaf.key_pem(), 0o600), (TLS_CERT_FILE, bundle.leaf.cert_pem(), 0o644)]
    written = []
    for name, data, mode in files:
        path = out_dir / name
        _write_atomic(path, data, mode)
        written.append(path)
    return written


def _write_atomic(path: Path, data: bytes, mode: int) -> None:
    # The temp file lives in the target directory so os.replace is a same-filesystem rename.
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _validity_window(now: dt.datetime | None, validity: dt.timedelta) -> tuple[dt.datetime, dt.datetime]:
    if validity <= dt.timedelta(0):
        raise CertificateError("validity must be positive")
    start = now or _utcnow()
    return start - CLOCK_SKEW, start + validity


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _signature_hash(key: PrivateKey) -> hashes.SHA256 | hashes.SHA384:
    if isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.key_size > 256:
        return hashes.SHA384()
    return hashes.SHA256()


def _authority_key_id(ca: CertifiedKey) -> x509.AuthorityKeyIdentifier:
    try:
        ski = ca.cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    except x509.ExtensionNotFound:
        # Older CAs may lack an SKI; derive the usual value from the public key.
        return x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key())
    return x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski)


def _spki(public_key: PublicKeyTypes) -> bytes:
    return public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _key_usage(
    *,
    digital_signature: bool = False,
    key_encipherment: bool = False,
    key_cert_sign: bool = False,
    crl_sign: bool = False,
) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=digital_signature,
        content_commitment=False,
        key_encipherment=key_encipherment,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=key_cert_sign,
        crl_sign=crl_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _parse_ip(value: IPAddress | str) -> IPAddress:
    if isinstance(value, str):
        try:
            return ipaddress.ip_address(value)
        except ValueError:
            raise CertificateError(f"{value!r} is not an IP address") from None
    return value


def _unique(items: Iterable[_T]) -> list[_T]:
    return list(dict.fromkeys(items))
